//go:build !race

package lapack

const raceEnabled = false
