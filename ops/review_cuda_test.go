//go:build mglacuda

package ops

import (
	"testing"

	"github.com/mgla/mgla/kernels"
	"github.com/mgla/mgla/sharding"
	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"
)

// A zero pivot of the factor is ErrNotPositiveDefinite from Potri on every
// engine: the CPU kernels, one GPU (cuSOLVER's own status used to come
// back) and a GPU mesh (an Inf inverse used to).
func TestPotriZeroPivotIsNotPD(t *testing.T) {
	cpu, err := sharding.CPUMesh(1)
	require.NoError(t, err)
	type run struct {
		name string
		mesh *sharding.Mesh
		s    meshSolver
	}
	runs := []run{{"host", cpu, hostSolver{}}}
	if m, err := sharding.GPUMesh(0); err == nil {
		runs = append(runs, run{"gpu single", m, gpuSolver{DispatchAuto}})
	}
	if m, err := sharding.GPUMesh(0, 1); err == nil {
		runs = append(runs, run{"gpu mesh", m, gpuSolver{DispatchMesh}})
	}
	const n = 4
	data := make([]float64, n*n)
	for i := range n {
		data[i*n+i] = 1
	}
	data[2*n+2] = 0
	for _, r := range runs {
		l, err := sharding.Put(tensor.New(tensor.WithShape(n, n), tensor.WithBacking(append([]float64(nil), data...))), r.mesh, sharding.Cyclic(2))
		require.NoError(t, err)
		c, err := sharding.New(r.mesh, tensor.Shape{n, n}, tensor.Float64, sharding.Cyclic(2))
		require.NoError(t, err)
		err = r.s.potri(l, c)
		require.ErrorIs(t, err, kernels.ErrNotPositiveDefinite, "%s: %v", r.name, err)
		var npd *kernels.NotPositiveDefiniteError
		require.ErrorAs(t, err, &npd, r.name)
		require.Equal(t, 3, npd.Order, r.name)
	}
}
