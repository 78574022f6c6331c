package ops

import (
	"fmt"

	"github.com/mgla/mgla/cyclic"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/tensor"
)

// colMajor returns the global column-major copy (leading dimension = rows) of
// a sharded tensor, for the host kernels. On a one-device mesh in a column
// layout the shard already is that matrix: with alias set it is returned
// without a copy, and the caller must not modify it.
func colMajor[T any](t *sharding.Tensor, alias bool) ([]T, error) {
	rows, cols := t.Rows(), t.Cols()
	if t.Mesh().Kind() != sharding.CPU {
		// Other meshes: through a row-major host copy.
		d, err := t.Gather()
		if err != nil {
			return nil, err
		}
		rm, ok := d.Data().([]T)
		if !ok {
			return nil, fmt.Errorf("ops: gathered %T", d.Data())
		}
		g := make([]T, rows*cols)
		for i := range rows {
			for j := range cols {
				g[i+j*rows] = rm[i*cols+j]
			}
		}
		return g, nil
	}
	sh, err := sharding.HostShards[T](t)
	if err != nil {
		return nil, err
	}
	if len(sh) == 1 && t.Layout().Kind != cyclic.RowBlocks {
		if alias {
			return sh[0], nil
		}
		return append([]T(nil), sh[0]...), nil
	}
	g := make([]T, rows*cols)
	cyclic.Gather(t.Layout(), rows, cols, len(sh), sh, g, rows, false)
	return g, nil
}

// storeColMajor writes a global column-major matrix into t's shards.
func storeColMajor[T any](g []T, t *sharding.Tensor) error {
	rows, cols := t.Rows(), t.Cols()
	if t.Mesh().Kind() != sharding.CPU {
		rm := make([]T, rows*cols)
		for i := range rows {
			for j := range cols {
				rm[i*cols+j] = g[i+j*rows]
			}
		}
		return t.Load(tensor.New(tensor.WithShape(t.Shape()...), tensor.WithBacking(rm)))
	}
	sh, err := sharding.HostShards[T](t)
	if err != nil {
		return err
	}
	if len(sh) == 1 && t.Layout().Kind != cyclic.RowBlocks && &sh[0][0] == &g[0] {
		return nil // g is the shard itself
	}
	cyclic.Scatter(t.Layout(), rows, cols, len(sh), g, rows, false, sh)
	return nil
}

// writable returns t's single shard when it can be written in place as the
// global column-major matrix, else a fresh buffer to store later.
func writable[T any](t *sharding.Tensor) []T {
	if t.Mesh().Kind() == sharding.CPU && t.Mesh().Size() == 1 && t.Layout().Kind != cyclic.RowBlocks {
		if sh, err := sharding.HostShards[T](t); err == nil {
			return sh[0]
		}
	}
	return make([]T, t.Rows()*t.Cols())
}
