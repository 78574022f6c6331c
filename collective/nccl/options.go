package nccl

import (
	"time"

	"github.com/mgla/mgla/collective"
)

// Option configures a communicator made by NewMesh or NewProcess.
type Option func(*options)

type options struct {
	timeout  time.Duration
	noChecks bool
}

// WithTimeout sets how long a call (and, for NewProcess, the set-up) waits
// for its peers before collective.ErrTimeout. Zero or less means
// collective.Timeout() (MGLA_COLLECTIVE_TIMEOUT, else DefaultTimeout).
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithoutChecks turns off the consistency checks of a process communicator
// (package documentation): each call then skips its metadata exchange, and
// ranks that make different calls hang until the timeout or get garbage.
// Split is checked all the same. A mesh communicator has nothing to check
// (one process makes every rank's call), so the option changes nothing
// there.
func WithoutChecks() Option { return func(o *options) { o.noChecks = true } }

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
