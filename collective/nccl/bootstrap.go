package nccl

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/tensor"
)

// IDBytes is the size of an NCCL unique id (NCCL_UNIQUE_ID_BYTES).
const IDBytes = 128

// Bootstrap gives every rank of a process communicator the NCCL unique id
// that rank 0 made, before ncclCommInitRank.
type Bootstrap interface {
	// ShareID is called once on every rank: rank 0 passes its id, the
	// others nil; every rank gets rank 0's id (IDBytes bytes) back, or an
	// error once deadline has passed.
	ShareID(rank, size int, id []byte, deadline time.Time) ([]byte, error)
}

// FileBootstrap shares the id through a file at path on a file system that
// every rank sees (one host, or a shared one): rank 0 writes it atomically
// (a temporary file renamed to path) and removes it once the communicator is
// up; the other ranks poll for it until the deadline. Use a fresh path for
// each run (with the job id, say): a file left by a run that died is read as
// the new id, and that run then fails with collective.ErrTimeout.
func FileBootstrap(path string) Bootstrap { return fileBootstrap{path} }

type fileBootstrap struct{ path string }

func (f fileBootstrap) ShareID(rank, size int, id []byte, deadline time.Time) ([]byte, error) {
	if rank == 0 {
		if len(id) != IDBytes {
			return nil, fmt.Errorf("%w: collective/nccl: an NCCL id of %d bytes, want %d", collective.ErrBadCall, len(id), IDBytes)
		}
		tmp, err := os.CreateTemp(filepath.Dir(f.path), filepath.Base(f.path)+".tmp*")
		if err != nil {
			return nil, fmt.Errorf("%w: collective/nccl: file bootstrap: %v", collective.ErrEngine, err)
		}
		_, err = tmp.Write(id)
		if err == nil {
			err = tmp.Sync()
		}
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), f.path)
		}
		if err != nil {
			os.Remove(tmp.Name())
			return nil, fmt.Errorf("%w: collective/nccl: file bootstrap: writing the NCCL id: %v", collective.ErrEngine, err)
		}
		return slices.Clone(id), nil
	}
	pause := time.Millisecond
	for {
		b, err := os.ReadFile(f.path)
		if err == nil && len(b) == IDBytes {
			return b, nil
		}
		if err != nil && !os.IsNotExist(err) {
			return nil, fmt.Errorf("%w: collective/nccl: file bootstrap: %v", collective.ErrEngine, err)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w: collective/nccl: rank %d of %d: rank 0 wrote no NCCL id to %s in time",
				collective.ErrTimeout, rank, size, f.path)
		}
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// done is called on every rank once its communicator is up: every rank has
// read the id, so rank 0 removes the file.
func (f fileBootstrap) done(rank int) {
	if rank == 0 {
		os.Remove(f.path)
	}
}

// CommBootstrap shares the id over c, a communicator of the same processes
// in which this process drives rank rank (an MPI communicator, say): one
// Bcast from rank 0 of the id's bytes in host memory.
func CommBootstrap(c collective.Comm) Bootstrap { return commBootstrap{c} }

type commBootstrap struct{ c collective.Comm }

func (b commBootstrap) ShareID(rank, size int, id []byte, _ time.Time) ([]byte, error) {
	if b.c.Size() != size || !slices.Equal(b.c.LocalRanks(), []int{rank}) {
		return nil, fmt.Errorf("%w: collective/nccl: bootstrap communicator of size %d with local ranks %v for rank %d of %d",
			collective.ErrBadCall, b.c.Size(), b.c.LocalRanks(), rank, size)
	}
	words := IDBytes / 8
	send := make([]float64, words)
	if rank == 0 {
		if len(id) != IDBytes {
			return nil, fmt.Errorf("%w: collective/nccl: an NCCL id of %d bytes, want %d", collective.ErrBadCall, len(id), IDBytes)
		}
		send = idWords(id)
	}
	recv := make([]float64, words)
	sb, err := sharding.NewHostBuffer(send)
	if err != nil {
		return nil, err
	}
	rb, err := sharding.NewHostBuffer(recv)
	if err != nil {
		return nil, err
	}
	err = b.c.Do(&collective.Call{Kind: collective.Bcast, Root: 0, Dtype: tensor.Float64, Count: words,
		Send: []sharding.Buffer{sb}, Recv: []sharding.Buffer{rb}, Name: "NCCL id bootstrap"})
	if err != nil {
		return nil, err
	}
	return wordsID(recv), nil
}

// idWords packs id into float64 words bit for bit (collectives move
// floating-point elements; no arithmetic touches them).
func idWords(id []byte) []float64 {
	w := make([]float64, len(id)/8)
	for i := range w {
		w[i] = math.Float64frombits(binary.LittleEndian.Uint64(id[8*i:]))
	}
	return w
}

// wordsID undoes idWords.
func wordsID(w []float64) []byte {
	id := make([]byte, 8*len(w))
	for i, x := range w {
		binary.LittleEndian.PutUint64(id[8*i:], math.Float64bits(x))
	}
	return id
}
