//go:build mglacuda

package ops

import (
	"errors"
	"fmt"
	"sync"

	"github.com/mgla/mgla/kernels/cusolver"
	"github.com/mgla/mgla/sharding"
)

// gpuSolver runs the forward kernels with cuSolverMg on the GPUs of a mesh.
// One cuSolverMg handle (with its device grid, descriptors and workspaces) is
// kept per mesh and reused by every call.
type gpuSolver struct{}

var (
	mgMu    sync.Mutex
	mgCache = map[uint64]*cusolver.Mg{}
)

func init() { solvers[sharding.GPU] = gpuSolver{} }

func handleFor(m *sharding.Mesh) (*cusolver.Mg, error) {
	mgMu.Lock()
	defer mgMu.Unlock()
	if h, ok := mgCache[m.Key()]; ok {
		return h, nil
	}
	if err := cusolver.Load(); err != nil {
		return nil, err
	}
	ids := make([]int, m.Size())
	for i, d := range m.Devices() {
		ids[i] = d.ID
	}
	h, err := cusolver.NewMg(ids)
	if err != nil {
		return nil, err
	}
	mgCache[m.Key()] = h
	return h, nil
}

func devicePtrs(t *sharding.Tensor) ([]uintptr, error) {
	ps := make([]uintptr, t.Mesh().Size())
	for d := range ps {
		b, ok := t.Shard(d).(*sharding.DeviceBuffer)
		if !ok {
			return nil, fmt.Errorf("ops: shard %d of %v is not on a GPU", d, t)
		}
		ps[d] = b.Ptr()
	}
	return ps, nil
}

// inPlace copies src into dst (same layout: one device copy per device) and
// runs the cuSolverMg call on dst.
func inPlace(src, dst *sharding.Tensor, call func(h *cusolver.Mg, p []uintptr) error) error {
	h, err := handleFor(dst.Mesh())
	if err != nil {
		return err
	}
	if src != nil {
		if err := src.RelayoutInto(dst); err != nil {
			return err
		}
	}
	p, err := devicePtrs(dst)
	if err != nil {
		return err
	}
	return call(h, p)
}

func (gpuSolver) potrf(a, l *sharding.Tensor) error {
	err := inPlace(a, l, func(h *cusolver.Mg, p []uintptr) error {
		return h.Potrf(a.Dtype(), a.Rows(), l.Layout().Tile, p)
	})
	var se *cusolver.SolverError
	if errors.As(err, &se) && se.Status.String() == "CUSOLVER_STATUS_INTERNAL_ERROR" {
		// Measured on CUDA 13 (4×H200): cusolverMgPotrf reports a matrix that
		// is not positive definite as INTERNAL_ERROR, not as info > 0. Find
		// the failing minor on the host (only on this error path) so the
		// caller gets ErrNotPositiveDefinite with its order.
		if hostErr := (hostSolver{}).potrf(a, l); hostErr != nil {
			return hostErr
		}
		return err
	}
	if err != nil {
		return err
	}
	return l.ZeroStrictUpper()
}

func (gpuSolver) potrs(l, b, x *sharding.Tensor) error {
	lp, err := devicePtrs(l)
	if err != nil {
		return err
	}
	return inPlace(b, x, func(h *cusolver.Mg, p []uintptr) error {
		return h.PotrsBlock(l.Dtype(), l.Rows(), x.Cols(), l.Layout().Tile, x.Layout().Tile, lp, p)
	})
}

func (gpuSolver) potri(l, c *sharding.Tensor) error {
	err := inPlace(l, c, func(h *cusolver.Mg, p []uintptr) error {
		return h.Potri(l.Dtype(), l.Rows(), c.Layout().Tile, p)
	})
	if err != nil {
		return err
	}
	// cuSolverMg fills one triangle; mirror it (through the host for now).
	return symmetrizeThroughHost(c)
}

func (gpuSolver) syevd(a *sharding.Tensor, w []float64, v *sharding.Tensor) error {
	work := v
	if work == nil {
		var err error
		if work, err = sharding.New(a.Mesh(), a.Shape(), a.Dtype(), a.Layout()); err != nil {
			return err
		}
		defer work.Free()
	}
	return inPlace(a, work, func(h *cusolver.Mg, p []uintptr) error {
		return h.Syevd(a.Dtype(), a.Rows(), a.Layout().Tile, p, w, v != nil)
	})
}
