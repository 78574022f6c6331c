//go:build !mglacuda

package nccl

import (
	"errors"
	"strings"
	"testing"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/sharding"
)

func TestWithoutTag(t *testing.T) {
	m, err := sharding.CPUMesh(2)
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewMesh(m)
	if !errors.Is(err, collective.ErrUnavailable) || !strings.Contains(err.Error(), "mglacuda") {
		t.Errorf("NewMesh without the tag: %v, want ErrUnavailable naming the mglacuda tag", err)
	}
	_, err = NewProcess(0, 1, 0, FileBootstrap(t.TempDir()+"/id"))
	if !errors.Is(err, collective.ErrUnavailable) {
		t.Errorf("NewProcess without the tag: %v, want ErrUnavailable", err)
	}
	if collective.GPUMeshComm != nil {
		t.Errorf("collective.GPUMeshComm is set in a build without the GPU engine")
	}
}
