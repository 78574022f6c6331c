package main

import (
	"math"
	"testing"
	"time"

	"github.com/mgla/mgla/collective"
)

// TestTrainRecoversTruth: one process on fresh data recovers the true
// parameters to the noise level.
func TestTrainRecoversTruth(t *testing.T) {
	cfg := defaultConfig()
	cfg.Seed, cfg.Progress = uint64(time.Now().UnixNano()), nil
	t.Logf("seed %d", cfg.Seed)
	params, err := Train(collective.Self(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := append(append([]float64(nil), trueWeights...), trueBias)
	for j := range want {
		if math.Abs(params[j]-want[j]) > 0.03 {
			t.Errorf("parameter %d = %v, true %v", j, params[j], want[j])
		}
	}
}

// TestTrainTooManyRanks: a rank without samples is an error, not a NaN.
func TestTrainTooManyRanks(t *testing.T) {
	cfg := defaultConfig()
	cfg.Samples, cfg.Progress = 0, nil
	if _, err := Train(collective.Self(), cfg); err == nil {
		t.Fatal("no error for an empty data set")
	}
}
