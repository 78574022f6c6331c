package benchcsv

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAppendHeader: Append writes Header into a new or empty file and not
// into one that already has rows.
func TestAppendHeader(t *testing.T) {
	row := Row{Op: "potrf", Dtype: "float64", Path: "mg", N: 1024, NDev: 1, Tile: 256, Seconds: 0.5}
	line := "potrf,float64,1024,0,1,256,mg,0.5,0,0,0,0\n"
	for _, tc := range []struct {
		name     string
		existing *string // nil: no file
		want     string
	}{
		{"new file", nil, Header + "\n" + line},
		{"empty file", ptr(""), Header + "\n" + line},
		{"file with a header", ptr(Header + "\n"), Header + "\n" + line},
		{"file with rows", ptr(Header + "\n" + line), Header + "\n" + line + line},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out.csv")
			if tc.existing != nil {
				if err := os.WriteFile(path, []byte(*tc.existing), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			w, err := Append(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Write(row); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("file holds\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func ptr(s string) *string { return &s }
