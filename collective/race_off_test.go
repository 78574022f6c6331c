//go:build !race

package collective_test

const raceEnabled = false
