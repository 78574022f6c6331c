package mgla_test

import (
	"flag"
	"testing"

	"github.com/mgla/mgla"
	"github.com/mgla/mgla/sharding"
)

// The shared suite (this package's tests) runs on CPU meshes by default. In
// a mglacuda build on a GPU machine, `-mgla.mesh=gpu` runs the same tests on
// GPU meshes (a test that asks for more devices than are visible is
// skipped), and `-mgla.dispatch=mesh|single|auto` picks the GPU solver.
var (
	meshFlag     = flag.String("mgla.mesh", "cpu", "devices of the shared tests: cpu or gpu")
	dispatchFlag = flag.String("mgla.dispatch", "auto", "GPU dispatch of the shared tests: auto, mesh or single")
)

// gpuTestMesh is set by the mglacuda tests: the mesh over the first ndev
// GPUs, or ok == false when fewer are visible.
var gpuTestMesh func(t *testing.T, ndev int) (m *sharding.Mesh, ok bool)

// testMesh returns the mesh of ndev devices that the shared tests run on.
func testMesh(t *testing.T, ndev int) (*sharding.Mesh, error) {
	t.Helper()
	if *meshFlag != "gpu" {
		return sharding.CPUMesh(ndev)
	}
	if gpuTestMesh == nil {
		t.Fatal("-mgla.mesh=gpu needs a mglacuda build")
	}
	m, ok := gpuTestMesh(t, ndev)
	if !ok {
		t.Skipf("needs %d GPUs", ndev)
	}
	return m, nil
}

// onMesh places an op on m with the dispatch of -mgla.dispatch.
func onMesh(m *sharding.Mesh) mgla.Option {
	d := map[string]mgla.Dispatch{"auto": mgla.DispatchAuto, "mesh": mgla.DispatchMesh, "single": mgla.DispatchSingle}[*dispatchFlag]
	return mgla.Options(mgla.WithMesh(m), mgla.WithDispatch(d))
}
