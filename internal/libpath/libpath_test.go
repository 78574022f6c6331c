package libpath

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestEnvDirs(t *testing.T) {
	t.Setenv("MGLA_TEST_DIRS", ":/a::/b/c:")
	if got, want := EnvDirs("MGLA_TEST_DIRS"), []string{"/a", "/b/c"}; !slices.Equal(got, want) {
		t.Fatalf("EnvDirs = %q, want %q", got, want)
	}
	t.Setenv("MGLA_TEST_DIRS", "")
	if got := EnvDirs("MGLA_TEST_DIRS"); len(got) != 0 {
		t.Fatalf("EnvDirs of an empty variable = %q, want none", got)
	}
}

func TestCandidatesOrder(t *testing.T) {
	got := Candidates([]string{"libx.so.2", "libx.so.1"}, []string{"/env"}, []string{"/after1", "/after2"})
	want := []string{
		"/env/libx.so.2", "/env/libx.so.1",
		"libx.so.2", "libx.so.1",
		"/after1/libx.so.2", "/after1/libx.so.1",
		"/after2/libx.so.2", "/after2/libx.so.1",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Candidates =\n%q\nwant\n%q", got, want)
	}
}

func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPythonPackageDirs(t *testing.T) {
	root := t.TempDir()
	venv := filepath.Join(root, "venv")
	conda := filepath.Join(root, "conda")
	onPath := filepath.Join(root, "opt", "py")
	home := filepath.Join(root, "home")
	sub := filepath.Join("nvidia", "nccl", "lib")
	want := []string{
		filepath.Join(venv, "lib", "python3.12", "site-packages", sub),
		filepath.Join(venv, "lib", "python3.9", "site-packages", sub),
		filepath.Join(conda, "lib", "python3.11", "site-packages", sub),
		filepath.Join(onPath, "lib", "python3.10", "dist-packages", sub),
		filepath.Join(home, ".local", "lib", "python3.13", "site-packages", sub),
	}
	mkdirs(t, want...)
	// A python3.* without the package, and the package in a folder that is
	// neither site- nor dist-packages: neither is listed.
	mkdirs(t, filepath.Join(venv, "lib", "python3.11", "site-packages"),
		filepath.Join(conda, "lib", "python3.11", "other", sub))
	mkdirs(t, filepath.Join(onPath, "bin"))
	if err := os.WriteFile(filepath.Join(onPath, "bin", "python3"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("VIRTUAL_ENV", venv)
	t.Setenv("CONDA_PREFIX", conda)
	t.Setenv("PATH", filepath.Join(root, "nothing")+string(filepath.ListSeparator)+filepath.Join(onPath, "bin"))
	t.Setenv("HOME", home)
	got := PythonPackageDirs("nvidia/nccl/lib")
	// /usr/local and /usr of this machine may hold the package too: they
	// come last, after everything under the test's prefixes.
	if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
		t.Fatalf("PythonPackageDirs =\n%q\nwant first\n%q", got, want)
	}
	for _, d := range got[len(want):] {
		if !strings.HasPrefix(d, "/usr/lib/") && !strings.HasPrefix(d, "/usr/local/lib/") {
			t.Errorf("unexpected directory %q after the test's prefixes", d)
		}
	}
}

func TestPythonPrefixesNoDuplicates(t *testing.T) {
	t.Setenv("VIRTUAL_ENV", "/usr/local/")
	t.Setenv("CONDA_PREFIX", "/usr")
	got := PythonPrefixes()
	seen := map[string]bool{}
	for _, p := range got {
		if seen[p] {
			t.Fatalf("PythonPrefixes lists %q twice: %q", p, got)
		}
		seen[p] = true
	}
	if got[0] != "/usr/local" || got[1] != "/usr" {
		t.Fatalf("PythonPrefixes = %q, want $VIRTUAL_ENV then $CONDA_PREFIX first", got)
	}
}
