package failedruns

import (
	"errors"
	"testing"
)

type name string

func (n name) String() string { return string(n) }

// A backward step passes while no op of its key failed after its forward,
// and is ErrFailedRun after one did; other keys are not affected.
func TestCheck(t *testing.T) {
	a, b := new(int), new(int)
	ranA, ranB := Now(a), Now(b)
	if err := Check(a, ranA, name("op")); err != nil {
		t.Fatalf("no failure: %v", err)
	}
	Failed(a)
	if err := Check(a, ranA, name("op")); !errors.Is(err, ErrFailedRun) {
		t.Fatalf("after a failure of its key: %v, want ErrFailedRun", err)
	}
	if err := Check(b, ranB, name("other")); err != nil {
		t.Fatalf("another key's failure: %v", err)
	}
	if err := Check(a, Now(a), name("op")); err != nil {
		t.Fatalf("a forward after the failure: %v", err)
	}
}

// Record counts a failure, and after a success sets ranAt so that Check
// passes until the next failure.
func TestRecord(t *testing.T) {
	g := new(int)
	var ranAt uint64
	Record(g, nil, &ranAt)
	if err := Check(g, ranAt, name("op")); err != nil {
		t.Fatalf("after a success: %v", err)
	}
	Record(g, errors.New("failed"), &ranAt)
	if err := Check(g, ranAt, name("op")); !errors.Is(err, ErrFailedRun) {
		t.Fatalf("after a failure: %v, want ErrFailedRun", err)
	}
}
