//go:build !mglacuda || !mpi

package nccl

import (
	"errors"
	"strings"
	"testing"

	"github.com/mgla/mgla/collective"
)

// TestNewProcessMPIWithoutTags: without both the mglacuda and mpi tags,
// NewProcessMPI returns collective.ErrUnavailable naming the tags.
func TestNewProcessMPIWithoutTags(t *testing.T) {
	c, err := NewProcessMPI(nil, 0, WithoutChecks())
	if c != nil || !errors.Is(err, collective.ErrUnavailable) ||
		!strings.Contains(err.Error(), "mglacuda") || !strings.Contains(err.Error(), "mpi") {
		t.Errorf("NewProcessMPI without the tags: %v, %v; want nil, ErrUnavailable naming the mglacuda and mpi tags", c, err)
	}
}
