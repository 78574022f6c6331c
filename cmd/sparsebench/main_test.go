package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPrepareOutputs: the output folders are made before anything is
// measured, a path that cannot be written is an error, and no file is left
// where there was none.
func TestPrepareOutputs(t *testing.T) {
	tmp := t.TempDir()
	blocker := filepath.Join(tmp, "file") // a file where a folder is wanted
	if err := os.WriteFile(blocker, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	existing := filepath.Join(tmp, "old.csv")
	if err := os.WriteFile(existing, []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		dir     string
		files   []string
		wantErr bool
		dirs    []string // folders that must exist afterwards
	}{
		{"nothing", "", []string{"", ""}, false, nil},
		{"csv in a new folder", "", []string{filepath.Join(tmp, "a/b/sparse.csv"), ""}, false, []string{filepath.Join(tmp, "a/b")}},
		{"svg folder and md", filepath.Join(tmp, "svg"), []string{"", filepath.Join(tmp, "md/sparse.md")}, false,
			[]string{filepath.Join(tmp, "svg"), filepath.Join(tmp, "md")}},
		{"existing file", "", []string{existing}, false, nil},
		{"csv under a file", "", []string{filepath.Join(blocker, "sparse.csv")}, true, nil},
		{"svg folder under a file", filepath.Join(blocker, "svg"), nil, true, nil},
		{"csv is a folder", "", []string{tmp}, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := prepareOutputs(tc.dir, tc.files...)
			if (err != nil) != tc.wantErr {
				t.Fatalf("prepareOutputs(%q, %q) = %v, want error %v", tc.dir, tc.files, err, tc.wantErr)
			}
			for _, d := range tc.dirs {
				if st, err := os.Stat(d); err != nil || !st.IsDir() {
					t.Errorf("folder %s not made: %v", d, err)
				}
			}
			for _, f := range tc.files {
				if f == "" || f == existing || f == tmp {
					continue
				}
				if _, err := os.Stat(f); err == nil {
					t.Errorf("%s left behind", f)
				}
			}
		})
	}
	if b, err := os.ReadFile(existing); err != nil || string(b) != "kept" {
		t.Errorf("existing file now holds %q (%v), want it unchanged", b, err)
	}
}
