//go:build mpi

package nccl

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/mgla/mgla/collective/mpi"
)

// With the mpi tag every rank of an mpirun job runs every test, and MPI is
// finalized at the end (when a test started it).
func TestMain(m *testing.M) {
	code := m.Run()
	if err := mpi.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "mpi.Finalize:", err)
		code = 1
	}
	os.Exit(code)
}

// idFromSeed is an NCCL-id-sized byte string made from seed (its first 8
// bytes) with NaN and -0 bit patterns in it, so that every rank can check
// rank 0's id without knowing it in advance.
func idFromSeed(seed uint64) []byte {
	id := make([]byte, IDBytes)
	binary.LittleEndian.PutUint64(id, seed)
	r := rand.New(rand.NewPCG(seed, 3))
	for i := 8; i < IDBytes; i++ {
		id[i] = byte(r.UintN(256))
	}
	copy(id[8:], []byte{0x01, 0, 0, 0, 0, 0, 0xf0, 0x7f})
	copy(id[16:], []byte{0, 0, 0, 0, 0, 0, 0, 0x80})
	return id
}

// Under mpirun (make mpi-test, 1-4 ranks) every rank gets rank 0's id over
// the MPI engine, bit for bit.
func TestMPIBootstrap(t *testing.T) {
	w, err := mpi.World(mpi.WithTimeout(20 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var mine []byte
	if w.Rank() == 0 {
		seed := uint64(time.Now().UnixNano())
		t.Logf("seed %d on %d ranks", seed, w.Size())
		mine = idFromSeed(seed)
	}
	got, err := CommBootstrap(w).ShareID(w.Rank(), w.Size(), mine, time.Now().Add(20*time.Second))
	if err != nil {
		t.Fatalf("rank %d: %v", w.Rank(), err)
	}
	if want := idFromSeed(binary.LittleEndian.Uint64(got)); !bytes.Equal(got, want) {
		t.Fatalf("rank %d got %x, which is not rank 0's id %x", w.Rank(), got, want)
	}
}
