//go:build !mpi

package dist_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/dist"
)

func TestNewGridWithoutTag(t *testing.T) {
	g, err := dist.NewGrid(nil, 0, 0)
	if g != nil || !errors.Is(err, collective.ErrUnavailable) || !strings.Contains(err.Error(), "-tags mpi") {
		t.Fatalf("NewGrid without the mpi tag: %v, %v", g, err)
	}
}
