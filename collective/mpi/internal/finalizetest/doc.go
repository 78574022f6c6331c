// Package finalizetest holds the test of mpi.Finalize (build tag mpi). It
// is a package of its own because finalizing MPI ends it for the whole
// process: in the test binary of package mpi it would break every test that
// runs after it, and that binary's TestMain, which combines the ranks' exit
// codes over MPI and finalizes last. make mpi-test runs it under mpirun
// with 1 to 4 processes, as the other packages' tests.
package finalizetest
