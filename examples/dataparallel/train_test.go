package main

import (
	"math"
	"strings"
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

// TestTrainBadConfig: a configuration no rank can train with (no samples
// for some rank, negative steps, a learning rate that is not positive) is an
// error, the same on every rank, before any collective — not a NaN, a
// hang, or parameters that were never trained.
func TestTrainBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		says string
	}{
		{"no samples", func(c *Config) { c.Samples = 0 }, "samples"},
		{"negative steps", func(c *Config) { c.Steps = -1 }, "steps"},
		{"zero rate", func(c *Config) { c.Rate = 0 }, "learning rate"},
		{"NaN rate", func(c *Config) { c.Rate = math.NaN() }, "learning rate"},
		// A rate so large that the loss overflows: an error, not NaN
		// weights printed as trained.
		{"diverging rate", func(c *Config) { c.Rate = 1e10 }, "diverged"},
	} {
		cfg := defaultConfig()
		cfg.Progress = nil
		tc.edit(&cfg)
		if _, err := Train(collective.Self(), cfg); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want an error about the %s", tc.name, err, tc.says)
		}
	}
}
