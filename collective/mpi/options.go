package mpi

import (
	"fmt"
	"os"
	"time"

	"github.com/mgla/mgla/collective"
)

// Option configures a communicator made by World (communicators made by
// Split inherit their parent's).
type Option func(*config)

type config struct {
	timeout time.Duration // how long a rank waits for its peers
	checks  bool          // exchange call metadata before each collective
}

// WithTimeout sets how long a rank waits for its peers before a call fails
// with collective.ErrTimeout (d > 0). The default is
// collective.DefaultTimeout, or MGLA_COLLECTIVE_TIMEOUT when set.
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithoutChecks turns off the cross-rank consistency checks (the metadata
// exchange before each call, see the package documentation): calls are
// faster, but ranks that issue different calls get MPI's behaviour
// (garbage, a truncation error or a timeout) instead of ErrMismatch, and a
// timeout cannot name the ranks that did not arrive.
func WithoutChecks() Option { return func(c *config) { c.checks = false } }

// newConfig applies opts over the defaults.
func newConfig(opts []Option) (config, error) {
	cfg := config{timeout: collective.DefaultTimeout, checks: true}
	if v := os.Getenv("MGLA_COLLECTIVE_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return cfg, fmt.Errorf("%w: mpi: MGLA_COLLECTIVE_TIMEOUT=%q is not a positive Go duration (\"90s\")", collective.ErrBadCall, v)
		}
		cfg.timeout = d
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.timeout <= 0 {
		return cfg, fmt.Errorf("%w: mpi: timeout %v is not positive", collective.ErrBadCall, cfg.timeout)
	}
	return cfg, nil
}
