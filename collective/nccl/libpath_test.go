package nccl

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/internal/libpath"
)

func TestLibraryCandidates(t *testing.T) {
	root := t.TempDir()
	libDir := filepath.Join(root, "nccl")
	venv := filepath.Join(root, "venv")
	wheel := filepath.Join(venv, "lib", "python3.12", "site-packages", "nvidia", "nccl", "lib")
	for _, d := range []string{libDir, wheel} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("VIRTUAL_ENV", venv)
	t.Setenv("CONDA_PREFIX", "")
	t.Setenv(libpath.CUDALibDirEnv, "/cuda/a:/cuda/b")
	for _, tc := range []struct {
		name, env, first string
	}{
		{"directory", libDir, filepath.Join(libDir, "libnccl.so.2")},
		{"file", "/opt/x/libnccl.so.2.28.3", "/opt/x/libnccl.so.2.28.3"},
		{"unset", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(LibEnv, tc.env)
			got := libraryCandidates()
			want := []string{"/cuda/a/libnccl.so.2", "/cuda/b/libnccl.so.2", "libnccl.so.2"}
			if tc.first != "" {
				want = append([]string{tc.first}, want...)
			}
			for _, d := range libpath.CUDADirs() {
				want = append(want, filepath.Join(d, "libnccl.so.2"))
			}
			want = append(want, filepath.Join(wheel, "libnccl.so.2"))
			if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
				t.Fatalf("candidates =\n%q\nwant first\n%q", got, want)
			}
		})
	}
}

func TestNotFoundError(t *testing.T) {
	tried := []string{"/a/libnccl.so.2: cannot open shared object file", "libnccl.so.2: not found"}
	err := notFoundError(tried)
	if !errors.Is(err, collective.ErrUnavailable) {
		t.Fatalf("error %v does not wrap ErrUnavailable", err)
	}
	msg := err.Error()
	for _, want := range append(tried, "pip install nvidia-nccl-cu13", LibEnv, libpath.CUDALibDirEnv, "nvidia/nccl/lib") {
		if !strings.Contains(msg, want) {
			t.Errorf("error text lacks %q:\n%s", want, msg)
		}
	}
}
