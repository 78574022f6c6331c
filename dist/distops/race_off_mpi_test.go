//go:build mpi && !race

package distops_test

const raceEnabled = false
