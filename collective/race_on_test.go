//go:build race

package collective_test

// raceEnabled: the binary runs under the race detector, which reports
// Gorgonia's own race after a LispMachine error (RunAll's return against
// the failed run's backward pass: vm_genera.go:131 and :284).
const raceEnabled = true
