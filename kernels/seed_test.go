package kernels

import (
	"os"
	"strconv"
)

func lookupSeedEnv() (uint64, bool) {
	s := os.Getenv("KERNELS_SEED")
	if s == "" {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil
}
