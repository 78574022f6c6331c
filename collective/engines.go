package collective

import (
	"fmt"
	"os"
	"time"

	"github.com/mgla/mgla/sharding"
)

// GPUMeshComm makes the communicator of a GPU mesh (every device a rank),
// with the given timeout (0: Timeout()). It is nil unless a GPU engine is
// linked in: package collective/nccl sets it in its init when built with the
// mglacuda tag, so a program that wants NCCL behind NewMesh imports that
// package (for its side effect, if it uses nothing else of it). Engines set
// it from init functions only.
var GPUMeshComm func(m *sharding.Mesh, timeout time.Duration) (Comm, error)

// TimeoutEnv names the environment variable that overrides DefaultTimeout.
const TimeoutEnv = "MGLA_COLLECTIVE_TIMEOUT"

// Timeout returns how long a rank waits for its peers when its communicator
// was given no timeout: the Go duration in MGLA_COLLECTIVE_TIMEOUT ("90s")
// when set, else DefaultTimeout. A value that does not parse, or is not
// positive, is an error wrapping ErrBadCall.
func Timeout() (time.Duration, error) {
	v := os.Getenv(TimeoutEnv)
	if v == "" {
		return DefaultTimeout, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%w: %s=%q is not a positive Go duration (e.g. 90s)", ErrBadCall, TimeoutEnv, v)
	}
	return d, nil
}
