package collective

import (
	"cmp"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/mgla/mgla/sharding"
)

// MeshComm is implemented by mesh communicators (NewMesh, and GPU engines
// behind GPUMeshComm): every rank is a device of Mesh() and the process
// drives all of them. The graph ops hold sharded values on such a
// communicator (see the package doc).
type MeshComm interface {
	Comm
	Mesh() *sharding.Mesh
}

// NewMesh returns the communicator whose ranks are the devices of m, all
// local (LocalRanks is 0…m.Size()-1). On a CPU mesh every collective is a
// memory copy between host shards, with the reductions done in Go; Send and
// Recv alone return ErrBadCall (one process drives both ends: use SendRecv).
// On a GPU mesh it is the engine behind GPUMeshComm (NCCL, build tag
// mglacuda); without one it returns an error wrapping ErrUnavailable.
func NewMesh(m *sharding.Mesh) (MeshComm, error) {
	if m == nil {
		return nil, fmt.Errorf("%w: NewMesh of a nil mesh", ErrBadCall)
	}
	if m.Kind() == sharding.GPU {
		if GPUMeshComm == nil {
			return nil, fmt.Errorf("%w: %v: collectives on GPU meshes need NCCL (build with -tags mglacuda and import github.com/mgla/mgla/collective/nccl)", ErrUnavailable, m)
		}
		c, err := GPUMeshComm(m, 0)
		if err != nil {
			return nil, err
		}
		mc, ok := c.(MeshComm)
		if !ok {
			return nil, fmt.Errorf("%w: the GPU engine's communicator %T has no Mesh method", ErrEngine, c)
		}
		return mc, nil
	}
	return &hostMesh{mesh: m, closed: new(atomic.Bool)}, nil
}

// hostMesh is the CPU mesh engine. Communicators split from one share
// nothing but their parent's closed flag is independent: each closes alone.
type hostMesh struct {
	mesh   *sharding.Mesh
	closed *atomic.Bool
	hooks  CloseHooks
}

func (c *hostMesh) Size() int            { return c.mesh.Size() }
func (c *hostMesh) Mesh() *sharding.Mesh { return c.mesh }
func (c *hostMesh) String() string       { return fmt.Sprintf("mesh communicator of %v", c.mesh) }
func (c *hostMesh) OnClose(f func())     { c.hooks.Add(f) }
func (c *hostMesh) Close() error {
	c.hooks.Run()
	c.closed.Store(true)
	return nil
}
func (c *hostMesh) LocalRanks() []int {
	r := make([]int, c.Size())
	for i := range r {
		r[i] = i
	}
	return r
}

// Split groups the ranks by color (increasing), each group ordered by key
// then rank. A sub-communicator's Mesh is a new CPU mesh with one device
// per member: its ranks are virtual devices like the parent's.
func (c *hostMesh) Split(color, key func(rank int) int) ([]Comm, error) {
	if c.closed.Load() {
		return nil, fmt.Errorf("%w: Split of a closed %v", ErrClosed, c)
	}
	groups := map[int][]int{}
	for r := range c.Size() {
		if col := color(r); col >= 0 {
			groups[col] = append(groups[col], r)
		}
	}
	colors := make([]int, 0, len(groups))
	for col := range groups {
		colors = append(colors, col)
	}
	slices.Sort(colors)
	out := make([]Comm, 0, len(colors))
	for _, col := range colors {
		ranks := groups[col]
		slices.SortStableFunc(ranks, func(a, b int) int { return cmp.Compare(key(a), key(b)) })
		m, err := sharding.CPUMesh(len(ranks))
		if err != nil {
			return nil, err
		}
		out = append(out, &hostMesh{mesh: m, closed: new(atomic.Bool)})
	}
	return out, nil
}

// Do runs c on the host shards. Send and receive buffers must not overlap.
func (c *hostMesh) Do(call *Call) error {
	if c.closed.Load() {
		return fmt.Errorf("%w: %v on a closed %v", ErrClosed, call, c)
	}
	if err := call.Check(c.Size(), c.LocalRanks()); err != nil {
		return err
	}
	switch call.Kind {
	case Send, Recv:
		return fmt.Errorf("%w: %v: one process drives every rank of a mesh: use SendRecv on a mesh", ErrBadCall, call)
	case SendRecv:
		if err := checkPairs(call, c.Size()); err != nil {
			return err
		}
	}
	if call.Kind == Barrier || call.Count == 0 {
		return nil // every rank is in this call, nothing to move
	}
	run, ok := hostRunners[call.Dtype]
	if !ok {
		return fmt.Errorf("%w: %v: dtype %v", ErrBadCall, call, call.Dtype)
	}
	return run(call, c.Size())
}

// checkPairs checks that the SendRecv peers match: rank r receives from s
// exactly when s sends to r.
func checkPairs(call *Call, size int) error {
	for r := range size {
		if s := call.Src[r]; call.Dest[s] != r {
			return fmt.Errorf("%w: %v: rank %d receives from rank %d, which sends to rank %d", ErrMismatch, call, r, s, call.Dest[s])
		}
	}
	return nil
}

// Self returns a process communicator of one rank, this process alone: what
// a world of processes is for a program run without mpirun, for code written
// for process communicators (host values, one rank block per process). Every
// collective copies (reduces over one rank); Send and Recv return
// ErrBadCall (there is no peer).
func Self() Comm {
	m, _ := sharding.CPUMesh(1) // cannot fail for one device
	return selfComm{mesh: &hostMesh{mesh: m, closed: new(atomic.Bool)}}
}

// selfComm is a one-device host mesh without its Mesh method, so that the
// graph ops take host values.
type selfComm struct{ mesh *hostMesh }

func (c selfComm) Size() int         { return 1 }
func (c selfComm) LocalRanks() []int { return []int{0} }
func (c selfComm) Do(call *Call) error {
	if call.Kind == Send || call.Kind == Recv {
		return fmt.Errorf("%w: %v: the self communicator has no other rank to send to or receive from (SendRecv to rank 0 copies)", ErrBadCall, call)
	}
	return c.mesh.Do(call)
}
func (c selfComm) Close() error     { return c.mesh.Close() }
func (c selfComm) OnClose(f func()) { c.mesh.OnClose(f) }
func (c selfComm) String() string   { return "self communicator" }
func (c selfComm) Split(color, key func(rank int) int) ([]Comm, error) {
	if _, err := c.mesh.Split(color, key); err != nil {
		return nil, err
	}
	if color(0) < 0 {
		return nil, nil
	}
	return []Comm{Self()}, nil
}
