package nccl

import (
	"time"

	"github.com/mgla/mgla/collective"
)

// Option configures a communicator made by NewMesh or NewProcess.
type Option func(*options)

type options struct {
	timeout time.Duration
}

// WithTimeout sets how long a call (and, for NewProcess, the set-up) waits
// for its peers before collective.ErrTimeout. Zero or less means
// collective.Timeout() (MGLA_COLLECTIVE_TIMEOUT, else DefaultTimeout).
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

func makeOptions(opts []Option) (options, error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	if o.timeout <= 0 {
		d, err := collective.Timeout()
		if err != nil {
			return o, err
		}
		o.timeout = d
	}
	return o, nil
}
