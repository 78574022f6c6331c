package ptx

import (
	"strings"
	"testing"
)

// Every kernel that package sharding launches is an entry of the embedded
// PTX, and every entry of mgla.cu is in the PTX (a stale mgla.ptx fails here).
func TestEntries(t *testing.T) {
	for _, name := range Names() {
		if !strings.Contains(Source, ".entry "+name+"(") {
			t.Errorf("mgla.ptx has no entry %s: run `make ptx`", name)
		}
	}
	if got, want := strings.Count(Source, ".entry "), len(Names()); got != want {
		t.Errorf("mgla.ptx has %d entries, package ptx names %d", got, want)
	}
}
