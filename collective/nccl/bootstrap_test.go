package nccl

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/sharding"
)

func randomID(t *testing.T) []byte {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	id := make([]byte, IDBytes)
	for i := range id {
		id[i] = byte(r.UintN(256))
	}
	// Bit patterns of NaNs (quiet and signalling) and of -0 in some words:
	// they must cross as bits, not as numbers.
	copy(id[0:], []byte{0x01, 0, 0, 0, 0, 0, 0xf0, 0x7f})
	copy(id[8:], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(id[16:], []byte{0, 0, 0, 0, 0, 0, 0, 0x80})
	return id
}

func TestIDWordsRoundTrip(t *testing.T) {
	id := randomID(t)
	if got := wordsID(idWords(id)); !bytes.Equal(got, id) {
		t.Fatalf("wordsID(idWords(id)) = %x, want %x", got, id)
	}
}

func TestFileBootstrap(t *testing.T) {
	const size = 3
	id := randomID(t)
	path := filepath.Join(t.TempDir(), "nccl.id")
	boot := FileBootstrap(path)
	deadline := time.Now().Add(20 * time.Second)
	got := make([][]byte, size)
	errs := make([]error, size)
	var wg sync.WaitGroup
	for r := 1; r < size; r++ { // the readers start first and poll
		wg.Add(1)
		go func() { defer wg.Done(); got[r], errs[r] = boot.ShareID(r, size, nil, deadline) }()
	}
	time.Sleep(20 * time.Millisecond)
	got[0], errs[0] = boot.ShareID(0, size, id, deadline)
	wg.Wait()
	for r := range size {
		if errs[r] != nil || !bytes.Equal(got[r], id) {
			t.Fatalf("rank %d: %x, %v; want rank 0's id %x", r, got[r], errs[r], id)
		}
	}
	matches, _ := filepath.Glob(path + ".tmp*")
	if len(matches) > 0 {
		t.Errorf("temporary files left: %v", matches)
	}
	boot.(fileBootstrap).done(0)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("rank 0's done left %s behind (stat: %v)", path, err)
	}
}

func TestFileBootstrapErrors(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	_, err := FileBootstrap(filepath.Join(dir, "never")).ShareID(1, 2, nil, time.Now().Add(100*time.Millisecond))
	if !errors.Is(err, collective.ErrTimeout) {
		t.Fatalf("rank 1 with no id file: %v, want ErrTimeout", err)
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Fatalf("the 100ms deadline returned after %v", waited)
	}
	if _, err := FileBootstrap(filepath.Join(dir, "short")).ShareID(0, 2, []byte{1, 2, 3}, time.Now().Add(time.Second)); !errors.Is(err, collective.ErrBadCall) {
		t.Fatalf("rank 0 with a 3-byte id: %v, want ErrBadCall", err)
	}
	if _, err := FileBootstrap(filepath.Join(dir, "no", "such", "dir", "id")).ShareID(0, 2, make([]byte, IDBytes), time.Now().Add(time.Second)); !errors.Is(err, collective.ErrEngine) {
		t.Fatalf("rank 0 writing into a missing directory: %v, want ErrEngine", err)
	}
}

// hub is the shared memory of loopback communicators: a one-shot Bcast
// among size ranks, one goroutine each.
type hub struct {
	size  int
	mu    sync.Mutex
	data  []float64
	ready chan struct{}
}

// loopback is a process communicator of one rank of a hub, enough for
// CommBootstrap (Bcast of float64 host buffers).
type loopback struct {
	h    *hub
	rank int
}

func (l loopback) Size() int         { return l.h.size }
func (l loopback) LocalRanks() []int { return []int{l.rank} }
func (l loopback) Close() error      { return nil }
func (l loopback) Split(func(int) int, func(int) int) ([]collective.Comm, error) {
	return nil, fmt.Errorf("%w: loopback cannot split", collective.ErrUnavailable)
}

func (l loopback) Do(c *collective.Call) error {
	if err := c.Check(l.h.size, l.LocalRanks()); err != nil {
		return err
	}
	if c.Kind != collective.Bcast {
		return fmt.Errorf("%w: loopback only broadcasts", collective.ErrUnavailable)
	}
	if l.rank == c.Root {
		l.h.data = slices.Clone(c.Send[0].(*sharding.HostBuffer).Data().([]float64)[:c.Count])
		close(l.h.ready)
	}
	<-l.h.ready
	copy(c.Recv[0].(*sharding.HostBuffer).Data().([]float64), l.h.data)
	return nil
}

func TestCommBootstrap(t *testing.T) {
	const size = 4
	id := randomID(t)
	h := &hub{size: size, ready: make(chan struct{})}
	got := make([][]byte, size)
	errs := make([]error, size)
	var wg sync.WaitGroup
	for r := range size {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []byte
			if r == 0 {
				mine = id
			}
			got[r], errs[r] = CommBootstrap(loopback{h, r}).ShareID(r, size, mine, time.Now().Add(time.Minute))
		}()
	}
	wg.Wait()
	for r := range size {
		if errs[r] != nil || !bytes.Equal(got[r], id) {
			t.Fatalf("rank %d: %x, %v; want rank 0's id %x", r, got[r], errs[r], id)
		}
	}
}

func TestCommBootstrapMismatch(t *testing.T) {
	h := &hub{size: 2, ready: make(chan struct{})}
	for _, tc := range []struct {
		name       string
		rank, size int
	}{
		{"size", 0, 3},
		{"rank", 1, 2},
	} {
		_, err := CommBootstrap(loopback{h, 0}).ShareID(tc.rank, tc.size, make([]byte, IDBytes), time.Now().Add(time.Second))
		if !errors.Is(err, collective.ErrBadCall) {
			t.Errorf("%s mismatch: %v, want ErrBadCall", tc.name, err)
		}
	}
}
