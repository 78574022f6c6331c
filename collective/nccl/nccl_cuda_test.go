//go:build mglacuda

package nccl

import (
	"errors"
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/mgla/mgla/collective"
	"github.com/mgla/mgla/collective/collectivetest"
	"github.com/mgla/mgla/sharding"
	"gorgonia.org/cu"
	"gorgonia.org/tensor"
)

// testMeshes are the GPU meshes of 1, 2 (in reverse device order), 3 and 4
// devices that this machine has; the test skips without a GPU.
func testMeshes(t *testing.T) []*sharding.Mesh {
	t.Helper()
	if _, err := sharding.GPUMesh(); errors.Is(err, sharding.ErrNoGPU) {
		t.Skipf("no GPU (%v): the NCCL engine needs one", err)
	}
	n, err := cu.NumDevices()
	if err != nil {
		t.Fatal(err)
	}
	var out []*sharding.Mesh
	for _, ids := range [][]int{{0}, {1, 0}, {0, 1, 2}, {0, 1, 2, 3}} {
		if len(ids) > n {
			break
		}
		m, err := sharding.GPUMesh(ids...)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// rankData is one buffer per rank on a mesh, as the columns of a
// len×size column-block tensor (column r is rank r's shard).
type rankData struct {
	t    *sharding.Tensor
	bufs []sharding.Buffer
}

// upload puts cols (one slice per device of m, equal lengths) on m in dtype dt.
func upload(t testing.TB, m *sharding.Mesh, dt tensor.Dtype, cols [][]complex128) rankData {
	t.Helper()
	rows, n := len(cols[0]), len(cols)
	host := tensor.New(tensor.WithShape(rows, n), tensor.Of(dt))
	for r, col := range cols {
		for i, v := range col {
			var x any
			switch dt {
			case tensor.Float32:
				x = float32(real(v))
			case tensor.Float64:
				x = real(v)
			case tensor.Complex64:
				x = complex64(v)
			default:
				x = v
			}
			if err := host.SetAt(x, i, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	return place(t, m, host)
}

// place puts the rows×ranks host matrix on m in column blocks: column r is
// rank r's buffer.
func place(t testing.TB, m *sharding.Mesh, host *tensor.Dense) rankData {
	t.Helper()
	st, err := sharding.Put(host, m, sharding.ColBlocks())
	if err != nil {
		t.Fatal(err)
	}
	d := rankData{t: st}
	for r := range host.Shape()[1] {
		d.bufs = append(d.bufs, st.Shard(r))
	}
	return d
}

// download reads every rank's buffer back.
func (d rankData) download(t testing.TB) [][]complex128 {
	t.Helper()
	host, err := d.t.Gather()
	if err != nil {
		t.Fatal(err)
	}
	rows, n := host.Shape()[0], host.Shape()[1]
	out := make([][]complex128, n)
	for r := range n {
		out[r] = make([]complex128, rows)
		for i := range rows {
			v, err := host.At(i, r)
			if err != nil {
				t.Fatal(err)
			}
			switch x := v.(type) {
			case float32:
				out[r][i] = complex(float64(x), 0)
			case float64:
				out[r][i] = complex(x, 0)
			case complex64:
				out[r][i] = complex128(x)
			case complex128:
				out[r][i] = x
			}
		}
	}
	return out
}

// tolerance is the largest error allowed for size ranks reduced in dt.
func tolerance(dt tensor.Dtype, size int) float64 {
	if dt == tensor.Float32 || dt == tensor.Complex64 {
		return 4e-6 * float64(size+1)
	}
	return 1e-14 * float64(size+1)
}

// callCase is one Call of the table: kind, op and dtype.
type callCase struct {
	kind collective.Kind
	op   collective.ReduceOp
	dt   tensor.Dtype
}

// cases lists every Kind (but Send, Recv and Barrier) for every dtype NCCL
// moves, with every reduction the dtype allows.
func cases() []callCase {
	var out []callCase
	kinds := []collective.Kind{collective.AllReduce, collective.AllGather, collective.ReduceScatter, collective.AllToAll,
		collective.Bcast, collective.Reduce, collective.Gather, collective.Scatter, collective.Scan, collective.SendRecv}
	for _, dt := range append(append([]tensor.Dtype(nil), sharding.Dtypes...), ncclInts()...) {
		for _, k := range kinds {
			if !reduces(k) {
				out = append(out, callCase{k, collective.Sum, dt})
				continue
			}
			for _, op := range []collective.ReduceOp{collective.Sum, collective.Prod, collective.Min, collective.Max} {
				if isComplex(dt) && op != collective.Sum {
					continue
				}
				out = append(out, callCase{k, op, dt})
			}
		}
	}
	return out
}

// runCase runs one call on comm against the float64 reference: random send
// data for every rank (the same on every process, from rng), receive
// buffers longer than needed and pre-filled with random values (the part
// past RecvLen must stay), send buffers unchanged. The local ranks' buffers
// are on the GPU mesh m (one device per local rank) or, with host, host
// buffers, which a process communicator stages through its GPU.
func runCase(t *testing.T, rng *rand.Rand, comm collective.Comm, m *sharding.Mesh, cc callCase, count, root int, host bool) {
	size, local := comm.Size(), comm.LocalRanks()
	c := &collective.Call{Kind: cc.kind, Op: cc.op, Dtype: cc.dt, Count: count, Root: root}
	ref := *c // the call of every rank, for the reference
	if cc.kind == collective.SendRecv {
		for r := range size {
			ref.Dest = append(ref.Dest, (r+1)%size)
			ref.Src = append(ref.Src, (r+size-1)%size)
		}
		for _, r := range local {
			c.Dest, c.Src = append(c.Dest, ref.Dest[r]), append(c.Src, ref.Src[r])
		}
	}
	if collectivetest.IsInteger(cc.dt) {
		runIntCase(t, rng, comm, m, c, &ref)
		return
	}
	sendLen, recvLen := c.SendLen(size), c.RecvLen(size)+3
	send, recv := make([][]complex128, size), make([][]complex128, size)
	minMax := cc.op == collective.Min || cc.op == collective.Max
	for r := range size {
		send[r] = collectivetest.Random(rng, cc.dt, cc.op, sendLen)
		recv[r] = collectivetest.Random(rng, cc.dt, collective.Sum, recvLen)
		if minMax {
			// NaNs, signed zeros and infinities among the random values:
			// Min and Max follow Go's min and max (collectivetest.Specials).
			for i, s := range collectivetest.Specials(r, size, sendLen) {
				if v := real(s); v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
					send[r][i] = s
				}
			}
		}
	}
	mine := func(all [][]complex128) [][]complex128 {
		out := make([][]complex128, len(local))
		for i, r := range local {
			out[i] = all[r]
		}
		return out
	}
	var read func() (got, after [][]complex128)
	if host {
		for _, r := range local {
			sb, err := sharding.NewHostBuffer(collectivetest.Dense(cc.dt, tensor.Shape{sendLen}, send[r]).Data())
			if err != nil {
				t.Fatal(err)
			}
			rb, err := sharding.NewHostBuffer(collectivetest.Dense(cc.dt, tensor.Shape{recvLen}, recv[r]).Data())
			if err != nil {
				t.Fatal(err)
			}
			c.Send, c.Recv = append(c.Send, sb), append(c.Recv, rb)
		}
		read = func() (got, after [][]complex128) {
			for i := range local {
				got = append(got, collectivetest.Values(c.Recv[i].(*sharding.HostBuffer).Data()))
				after = append(after, collectivetest.Values(c.Send[i].(*sharding.HostBuffer).Data()))
			}
			return got, after
		}
	} else {
		sd, rd := upload(t, m, cc.dt, mine(send)), upload(t, m, cc.dt, mine(recv))
		defer sd.t.Free()
		defer rd.t.Free()
		c.Send, c.Recv = sd.bufs, rd.bufs
		read = func() (got, after [][]complex128) { return rd.download(t), sd.download(t) }
	}
	what := fmt.Sprintf("%v %v %v count %d root %d host %v", cc.kind, cc.op, cc.dt, count, root, host)
	if err := comm.Do(c); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	want := collectivetest.Reference(&ref, size, send)
	got, after := read()
	tol := tolerance(cc.dt, size)
	for i, r := range local {
		for j, w := range want[r] {
			if minMax && !collectivetest.SameFloat(got[i][j], w) {
				t.Fatalf("%s: rank %d element %d = %v, want %v (Go's %v)", what, r, j, real(got[i][j]), real(w), cc.op)
			}
			if e := cmplx.Abs(got[i][j] - w); !minMax && e > tol*math.Max(1, cmplx.Abs(w)) {
				t.Fatalf("%s: rank %d element %d = %v, want %v (error %.3g)", what, r, j, got[i][j], w, e)
			}
		}
		for j := len(want[r]); j < recvLen; j++ {
			if !collectivetest.SameFloat(got[i][j], recv[r][j]) || imag(got[i][j]) != imag(recv[r][j]) {
				t.Fatalf("%s: rank %d element %d past the receive length changed: %v, was %v", what, r, j, got[i][j], recv[r][j])
			}
		}
		for j := range send[r] {
			if !collectivetest.SameFloat(after[i][j], send[r][j]) || imag(after[i][j]) != imag(send[r][j]) {
				t.Fatalf("%s: rank %d's send buffer changed at %d", what, r, j)
			}
		}
	}
}

// ncclInts are the integer dtypes the NCCL engine moves: those GPU meshes
// hold (sharding.CheckGPUDtype: 4 and 8 bytes; NCCL itself has no 16-bit
// integers, and mgla's device kernels no 1- or 2-byte elements).
func ncclInts() []tensor.Dtype {
	var out []tensor.Dtype
	for _, dt := range sharding.IntDtypes {
		if sharding.CheckGPUDtype(dt) == nil {
			out = append(out, dt)
		}
	}
	return out
}

// uploadInts puts cols (one typed slice per device of m, equal lengths) on
// m, as the columns of a column-block tensor.
func uploadInts(t testing.TB, m *sharding.Mesh, cols []any) rankData {
	t.Helper()
	rows, n := reflect.ValueOf(cols[0]).Len(), len(cols)
	typ := reflect.TypeOf(cols[0])
	host := reflect.MakeSlice(typ, rows*n, rows*n)
	for r, col := range cols {
		for i := range rows {
			host.Index(i*n + r).Set(reflect.ValueOf(col).Index(i))
		}
	}
	return place(t, m, tensor.New(tensor.WithShape(rows, n), tensor.WithBacking(host.Interface())))
}

// downloadInts reads every rank's buffer back as a typed slice.
func (d rankData) downloadInts(t testing.TB) []any {
	t.Helper()
	host, err := d.t.Gather()
	if err != nil {
		t.Fatal(err)
	}
	rows, n := host.Shape()[0], host.Shape()[1]
	all := reflect.ValueOf(host.Data())
	out := make([]any, n)
	for r := range n {
		col := reflect.MakeSlice(all.Type(), rows, rows)
		for i := range rows {
			col.Index(i).Set(all.Index(i*n + r))
		}
		out[r] = col.Interface()
	}
	return out
}

// runIntCase is runCase for an integer dtype: exactly the reference of
// package collectivetest. Every process draws every rank's data (the same
// stream on each); the local ranks' go on the mesh m, one device each. ref
// is the call of every rank (c holds the local ranks' peers).
func runIntCase(t *testing.T, rng *rand.Rand, comm collective.Comm, m *sharding.Mesh, c, ref *collective.Call) {
	size, local := comm.Size(), comm.LocalRanks()
	name := fmt.Sprintf("%v %v %v count %d root %d", c.Kind, c.Op, c.Dtype, c.Count, c.Root)
	recvLen := c.RecvLen(size) + 3
	send, recv := make([]any, size), make([]any, size)
	for r := range size {
		send[r] = collectivetest.RandomInts(rng, c.Dtype, c.Op, c.SendLen(size), size)
		recv[r] = collectivetest.RandomInts(rng, c.Dtype, collective.Sum, recvLen, 1)
	}
	mine := func(all []any) []any {
		out := make([]any, len(local))
		for i, r := range local {
			out[i] = all[r]
		}
		return out
	}
	sd, rd := uploadInts(t, m, mine(send)), uploadInts(t, m, mine(recv))
	defer sd.t.Free()
	defer rd.t.Free()
	c.Send, c.Recv = sd.bufs, rd.bufs
	if err := comm.Do(c); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	want := collectivetest.ReferenceInts(ref, size, send)
	got := rd.downloadInts(t)
	n := c.RecvLen(size)
	for i, r := range local {
		if g := collectivetest.Slice(got[i], 0, n); !reflect.DeepEqual(g, want[r]) {
			t.Fatalf("%s: rank %d got %v, want %v", name, r, g, want[r])
		}
		g, was := collectivetest.Slice(got[i], n, recvLen), collectivetest.Slice(recv[r], n, recvLen)
		if !reflect.DeepEqual(g, was) {
			t.Fatalf("%s: rank %d: the elements past the receive length changed to %v from %v", name, r, g, was)
		}
	}
	if after := sd.downloadInts(t); !reflect.DeepEqual(after, mine(send)) {
		t.Fatalf("%s: a send buffer changed", name)
	}
}

func TestLoad(t *testing.T) {
	path, version, err := Library()
	if err != nil {
		t.Fatalf("NCCL not found on this GPU machine: %v", err)
	}
	t.Logf("NCCL %s from %s", version, path)
}

// Every Kind, dtype and reduction on every GPU mesh, against the float64
// reference, with counts that are not multiples of anything and roots at
// both ends.
func TestMeshCollectives(t *testing.T) {
	rng := seeded(t)
	for _, m := range testMeshes(t) {
		comm, err := NewMesh(m)
		if err != nil {
			t.Fatal(err)
		}
		for _, cc := range cases() {
			for _, count := range []int{1, 1 + rng.IntN(5000)} {
				root := 0
				if count > 1 {
					root = m.Size() - 1
				}
				t.Run(fmt.Sprintf("%v/%v/%v/%v/count=%d", m, cc.kind, cc.op, cc.dt, count), func(t *testing.T) {
					runCase(t, rng, comm, m, cc, count, root, false)
				})
			}
		}
		// Barrier, and a zero count (a no-op that must still check).
		if err := comm.Do(&collective.Call{Kind: collective.Barrier}); err != nil {
			t.Errorf("%v Barrier: %v", m, err)
		}
		if err := comm.Do(&collective.Call{Kind: collective.AllReduce, Dtype: tensor.Float64, Count: 0,
			Send: make([]sharding.Buffer, m.Size()), Recv: make([]sharding.Buffer, m.Size())}); err != nil {
			t.Errorf("%v AllReduce of 0 elements: %v", m, err)
		}
	}
}

// oneProcess is a process communicator of one rank on the first GPU (file
// bootstrap), closed when the test ends, and the GPU's mesh.
func oneProcess(t *testing.T, opts ...Option) (collective.Comm, *sharding.Mesh) {
	t.Helper()
	m := testMeshes(t)[0]
	comm, err := NewProcess(0, 1, m.Device(0).ID, FileBootstrap(filepath.Join(t.TempDir(), "id")), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { comm.Close() })
	return comm, m
}

// One process communicator of one rank (file bootstrap) runs the suite of
// TestProcesses' children (processSuite) in this process.
func TestProcessCollectives(t *testing.T) {
	rng := seeded(t)
	comm, m := oneProcess(t)
	if comm.Size() != 1 || len(comm.LocalRanks()) != 1 || comm.LocalRanks()[0] != 0 {
		t.Fatalf("Size %d, LocalRanks %v; want 1, [0]", comm.Size(), comm.LocalRanks())
	}
	processSuite(t, rng, comm, m, nil)
	if err := comm.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := comm.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := comm.Do(&collective.Call{Kind: collective.Barrier}); !errors.Is(err, collective.ErrClosed) {
		t.Fatalf("Do after Close: %v, want ErrClosed", err)
	}
}

// WithoutChecks: calls skip the record exchange (no record buffers are ever
// made) and still compute the right results, on device and host buffers.
func TestProcessWithoutChecks(t *testing.T) {
	rng := seeded(t)
	comm, m := oneProcess(t, WithoutChecks())
	for _, host := range []bool{false, true} {
		runCase(t, rng, comm, m, callCase{collective.AllReduce, collective.Sum, tensor.Float64}, 1+rng.IntN(1000), 0, host)
		runCase(t, rng, comm, m, callCase{collective.SendRecv, collective.Sum, tensor.Complex64}, 1+rng.IntN(1000), 0, host)
	}
	if err := comm.Do(&collective.Call{Kind: collective.Barrier}); err != nil {
		t.Fatalf("Barrier: %v", err)
	}
	if e := comm.(*Comm).e; e.meta.dev != 0 || e.seq != 3 {
		t.Errorf("without checks: record buffers %#x, call number %d; want none and 3", e.meta.dev, e.seq)
	}
}

// A process communicator rejects host buffers of another dtype and calls
// that mix host and device buffers, before anything moves.
func TestProcessBadHostCalls(t *testing.T) {
	rng := seeded(t)
	comm, m := oneProcess(t)
	const n = 9
	dev := upload(t, m, tensor.Float64, [][]complex128{collectivetest.Random(rng, tensor.Float64, collective.Sum, n)})
	defer dev.t.Free()
	recv := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9}
	for _, tc := range []struct {
		name string
		call *collective.Call
	}{
		{"float32 host buffer for a float64 call", hostCall(collective.Call{Kind: collective.AllReduce, Dtype: tensor.Float64, Count: n}, make([]float32, n), recv)},
		{"device send, host receive", func() *collective.Call {
			c := hostCall(collective.Call{Kind: collective.AllReduce, Dtype: tensor.Float64, Count: n}, nil, recv)
			c.Send = dev.bufs
			return c
		}()},
	} {
		if err := comm.Do(tc.call); !errors.Is(err, collective.ErrBadCall) {
			t.Errorf("%s: %v, want ErrBadCall", tc.name, err)
		} else {
			t.Logf("%s: %v", tc.name, err)
		}
	}
	for i, v := range recv {
		if v != float64(i+1) {
			t.Fatalf("a rejected call wrote the receive buffer at %d: %v", i, v)
		}
	}
}

// Bad calls return the right sentinel and leave the receive buffers as they
// were.
func TestBadCalls(t *testing.T) {
	rng := seeded(t)
	m := testMeshes(t)[0]
	comm, err := NewMesh(m)
	if err != nil {
		t.Fatal(err)
	}
	const n = 37
	send := upload(t, m, tensor.Float64, [][]complex128{collectivetest.Random(rng, tensor.Float64, collective.Sum, n)})
	recv := upload(t, m, tensor.Float64, [][]complex128{collectivetest.Random(rng, tensor.Float64, collective.Sum, n)})
	csend := upload(t, m, tensor.Complex128, [][]complex128{collectivetest.Random(rng, tensor.Complex128, collective.Sum, n)})
	crecv := upload(t, m, tensor.Complex128, [][]complex128{collectivetest.Random(rng, tensor.Complex128, collective.Sum, n)})
	before, cbefore := recv.download(t), crecv.download(t)
	host, err := sharding.NewHostBuffer(make([]float64, n))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		call collective.Call
		want error
	}{
		{"host buffer", collective.Call{Kind: collective.AllReduce, Dtype: tensor.Float64, Count: n,
			Send: []sharding.Buffer{host}, Recv: recv.bufs}, collective.ErrBadCall},
		{"short receive", collective.Call{Kind: collective.AllReduce, Dtype: tensor.Float64, Count: n + 1,
			Send: send.bufs, Recv: recv.bufs}, collective.ErrBadCall},
		{"root outside", collective.Call{Kind: collective.Bcast, Root: 1, Dtype: tensor.Float64, Count: n,
			Send: send.bufs, Recv: recv.bufs}, collective.ErrBadCall},
		{"lone send on a mesh", collective.Call{Kind: collective.Send, Dest: []int{0}, Dtype: tensor.Float64, Count: n,
			Send: send.bufs}, collective.ErrBadCall},
		{"lone receive on a mesh", collective.Call{Kind: collective.Recv, Src: []int{0}, Dtype: tensor.Float64, Count: n,
			Recv: recv.bufs}, collective.ErrBadCall},
		{"complex product", collective.Call{Kind: collective.AllReduce, Op: collective.Prod, Dtype: tensor.Complex128, Count: n,
			Send: csend.bufs, Recv: crecv.bufs}, collective.ErrUnavailable},
		{"complex max", collective.Call{Kind: collective.Scan, Op: collective.Max, Dtype: tensor.Complex128, Count: n,
			Send: csend.bufs, Recv: crecv.bufs}, collective.ErrBadCall},
		{"16-bit integers", collective.Call{Kind: collective.AllReduce, Dtype: tensor.Int16, Count: n,
			Send: send.bufs, Recv: recv.bufs}, collective.ErrBadCall},
		{"unsigned 16-bit integers", collective.Call{Kind: collective.Bcast, Dtype: tensor.Uint16, Count: n,
			Send: send.bufs, Recv: recv.bufs}, collective.ErrBadCall},
		{"8-bit integers", collective.Call{Kind: collective.AllReduce, Dtype: tensor.Int8, Count: n,
			Send: send.bufs, Recv: recv.bufs}, collective.ErrBadCall},
		{"bool dtype", collective.Call{Kind: collective.AllReduce, Dtype: tensor.Bool, Count: n,
			Send: send.bufs, Recv: recv.bufs}, collective.ErrBadCall},
	} {
		err := comm.Do(&tc.call)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		} else {
			t.Logf("%s: %v", tc.name, err)
		}
	}
	after, cafter := recv.download(t), crecv.download(t)
	for i := range n {
		if after[0][i] != before[0][i] || cafter[0][i] != cbefore[0][i] {
			t.Fatalf("a rejected call changed the receive buffer at %d", i)
		}
	}
	if _, err := NewMesh(nil); !errors.Is(err, collective.ErrBadCall) {
		t.Errorf("NewMesh(nil): %v, want ErrBadCall", err)
	}
	cpu, _ := sharding.CPUMesh(2)
	if _, err := NewMesh(cpu); !errors.Is(err, collective.ErrBadCall) {
		t.Errorf("NewMesh(CPU mesh): %v, want ErrBadCall", err)
	}
	boot := FileBootstrap(filepath.Join(t.TempDir(), "id"))
	for _, a := range [][3]int{{1, 1, 0}, {-1, 2, 0}, {0, 0, 0}, {0, 1, -1}} {
		if _, err := NewProcess(a[0], a[1], a[2], boot); !errors.Is(err, collective.ErrBadCall) {
			t.Errorf("NewProcess(rank %d, size %d, gpu %d): %v, want ErrBadCall", a[0], a[1], a[2], err)
		}
	}
	if _, err := NewProcess(0, 1, 0, nil); !errors.Is(err, collective.ErrBadCall) {
		t.Errorf("NewProcess without a bootstrap: %v, want ErrBadCall", err)
	}
}

// The NCCL communicators of a mesh are made once and shared, collective's
// hook returns them, ReleaseMesh closes them, and the next NewMesh makes
// new ones; Split makes working sub-communicators.
func TestMeshCacheAndSplit(t *testing.T) {
	rng := seeded(t)
	m := testMeshes(t)[0]
	a, err := NewMesh(m)
	if err != nil {
		t.Fatal(err)
	}
	if collective.GPUMeshComm == nil {
		t.Fatal("collective.GPUMeshComm is not set")
	}
	b, err := collective.GPUMeshComm(m, 0)
	if err != nil {
		t.Fatal(err)
	}
	if a.(*Comm).e != b.(*Comm).e {
		t.Fatal("two NewMesh of one mesh made two NCCL communicators")
	}
	// collective.NewMesh needs the Mesh method (collective.MeshComm).
	if mc, ok := b.(interface{ Mesh() *sharding.Mesh }); !ok || mc.Mesh() != m {
		t.Fatalf("the hook's communicator %T does not report its mesh %v", b, m)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Do(&collective.Call{Kind: collective.Barrier}); !errors.Is(err, collective.ErrClosed) {
		t.Fatalf("Do on a closed handle: %v, want ErrClosed", err)
	}
	if err := a.Do(&collective.Call{Kind: collective.Barrier}); err != nil {
		t.Fatalf("closing one handle broke another: %v", err)
	}
	subs, err := a.Split(func(int) int { return 5 }, func(r int) int { return r })
	if err != nil {
		t.Fatalf("Split: %v", err)
	}
	if len(subs) != 1 || subs[0].Size() != m.Size() || !subs[0].(*Comm).Mesh().Same(m) {
		t.Fatalf("Split into one color: %d communicators, want 1 of size %d on the devices of %v", len(subs), m.Size(), m)
	}
	runCase(t, rng, subs[0], m, callCase{collective.AllReduce, collective.Sum, tensor.Float32}, 1000, 0, false)
	if err := subs[0].Close(); err != nil {
		t.Fatal(err)
	}
	none, err := a.Split(func(int) int { return -1 }, func(r int) int { return r })
	if err != nil || len(none) != 0 {
		t.Fatalf("Split leaving every rank out: %v, %v; want none", none, err)
	}
	if err := ReleaseMesh(m); err != nil {
		t.Fatal(err)
	}
	if err := a.Do(&collective.Call{Kind: collective.Barrier}); !errors.Is(err, collective.ErrClosed) {
		t.Fatalf("Do after ReleaseMesh: %v, want ErrClosed", err)
	}
	c, err := NewMesh(m)
	if err != nil {
		t.Fatal(err)
	}
	if c.(*Comm).e == a.(*Comm).e {
		t.Fatal("NewMesh after ReleaseMesh reused the released communicators")
	}
	runCase(t, rng, c, m, callCase{collective.Scan, collective.Max, tensor.Float64}, 777, 0, false)
}

// Meshes over the same GPUs in the same order share one set of NCCL
// communicators (each set takes device memory on every GPU, so a mesh per
// run must not make one per mesh), each handle reports its own mesh, and
// ReleaseMesh of one releases them for every such mesh; meshes over the same
// GPUs in another order get a set of their own.
func TestMeshesOfOneGPUListShareCommunicators(t *testing.T) {
	rng := seeded(t)
	for _, m := range testMeshes(t) {
		ids := make([]int, m.Size())
		for i, d := range m.Devices() {
			ids[i] = d.ID
		}
		twin, err := sharding.GPUMesh(ids...)
		if err != nil {
			t.Fatal(err)
		}
		if twin.Key() == m.Key() {
			t.Fatalf("GPUMesh%v twice gave one mesh: the test needs two", ids)
		}
		a, err := NewMesh(m)
		if err != nil {
			t.Fatal(err)
		}
		b, err := NewMesh(twin)
		if err != nil {
			t.Fatal(err)
		}
		if a.(*Comm).e != b.(*Comm).e {
			t.Errorf("%v: two meshes over the same GPUs made two sets of NCCL communicators", m)
		}
		if a.(*Comm).Mesh() != m || b.(*Comm).Mesh() != twin {
			t.Errorf("%v: the handles report meshes %p and %p, want their own %p and %p", m, a.(*Comm).Mesh(), b.(*Comm).Mesh(), m, twin)
		}
		runCase(t, rng, b, twin, callCase{collective.AllReduce, collective.Sum, tensor.Float64}, 513, 0, false)
		if m.Size() > 1 {
			slices.Reverse(ids)
			other, err := sharding.GPUMesh(ids...)
			if err != nil {
				t.Fatal(err)
			}
			c, err := NewMesh(other)
			if err != nil {
				t.Fatal(err)
			}
			if c.(*Comm).e == a.(*Comm).e {
				t.Errorf("%v and %v, the same GPUs in another order, share NCCL communicators", m, other)
			}
			runCase(t, rng, c, other, callCase{collective.AllGather, collective.Sum, tensor.Float32}, 300, 0, false)
			if err := ReleaseMesh(other); err != nil {
				t.Fatal(err)
			}
		}
		if err := ReleaseMesh(twin); err != nil {
			t.Fatal(err)
		}
		if err := a.Do(&collective.Call{Kind: collective.Barrier}); !errors.Is(err, collective.ErrClosed) {
			t.Errorf("%v: Do after ReleaseMesh of a mesh over the same GPUs: %v, want ErrClosed", m, err)
		}
	}
	if err := ReleaseMesh(nil); err != nil {
		t.Errorf("ReleaseMesh(nil): %v", err)
	}
}

// A call that can never complete (a lone Send to itself on a one-rank
// process communicator) returns ErrTimeout (or NCCL's own error) within the
// timeout, and the communicator refuses later calls.
func TestCallTimeout(t *testing.T) {
	rng := seeded(t)
	m := testMeshes(t)[0]
	comm, err := NewProcess(0, 1, m.Device(0).ID, FileBootstrap(filepath.Join(t.TempDir(), "id")), WithTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer comm.Close()
	send := upload(t, m, tensor.Float32, [][]complex128{collectivetest.Random(rng, tensor.Float32, collective.Sum, 1000)})
	start := time.Now()
	err = comm.Do(&collective.Call{Kind: collective.Send, Dest: []int{0}, Dtype: tensor.Float32, Count: 1000, Send: send.bufs})
	t.Logf("lone Send after %v: %v", time.Since(start), err)
	if !errors.Is(err, collective.ErrTimeout) && !errors.Is(err, collective.ErrEngine) {
		t.Fatalf("lone Send: %v, want ErrTimeout or ErrEngine", err)
	}
	if errors.Is(err, collective.ErrTimeout) {
		if err := comm.Do(&collective.Call{Kind: collective.Barrier}); !errors.Is(err, collective.ErrClosed) {
			t.Fatalf("Do after a timeout: %v, want ErrClosed", err)
		}
	}
}

// Rank 0 of two whose peer never starts gets ErrTimeout from NewProcess.
func TestProcessInitTimeout(t *testing.T) {
	m := testMeshes(t)[0]
	start := time.Now()
	_, err := NewProcess(0, 2, m.Device(0).ID, FileBootstrap(filepath.Join(t.TempDir(), "id")), WithTimeout(3*time.Second))
	t.Logf("after %v: %v", time.Since(start), err)
	if !errors.Is(err, collective.ErrTimeout) {
		t.Fatalf("NewProcess with a missing peer: %v, want ErrTimeout", err)
	}
}

// A call still running at its deadline is aborted: a 4 GiB AllReduce
// (milliseconds on any GPU) under a timeout of one nanosecond returns
// ErrTimeout, the handle then returns ErrClosed, and the next NewMesh of
// the mesh makes new, working communicators. (The deadline has passed when
// wait first looks, so it aborts there; waiting for the watchdog's first
// look instead let the call finish first on a busy host, call 69.)
func TestWatchdogTimeout(t *testing.T) {
	rng := seeded(t)
	m := testMeshes(t)[0]
	// 4 GiB of float32: a one-rank AllReduce of it takes milliseconds on an
	// H100 (1 GiB took 1.1 ms and could finish before the watchdog's first
	// look), long enough for the already-passed deadline to be seen.
	const count = 1 << 30
	send, err := sharding.New(m, tensor.Shape{count, 1}, tensor.Float32, sharding.ColBlocks())
	if err != nil {
		t.Fatal(err)
	}
	defer send.Free()
	recv, err := sharding.New(m, tensor.Shape{count, 1}, tensor.Float32, sharding.ColBlocks())
	if err != nil {
		t.Fatal(err)
	}
	defer recv.Free()
	// Max runs on order-preserving keys made on the device, which the abort
	// path freed through the engine's released contexts: a panic.
	for _, op := range []collective.ReduceOp{collective.Sum, collective.Max} {
		comm, err := NewMesh(m, WithTimeout(time.Nanosecond))
		if err != nil {
			t.Fatal(err)
		}
		call := &collective.Call{Kind: collective.AllReduce, Op: op, Dtype: tensor.Float32, Count: count,
			Send: []sharding.Buffer{send.Shard(0)}, Recv: []sharding.Buffer{recv.Shard(0)}}
		start := time.Now()
		err = comm.Do(call)
		t.Logf("%v: after %v: %v", op, time.Since(start), err)
		if !errors.Is(err, collective.ErrTimeout) {
			t.Fatalf("4 GiB AllReduce %v with a 1ns timeout: %v, want ErrTimeout", op, err)
		}
		if err := comm.Do(call); !errors.Is(err, collective.ErrClosed) {
			t.Fatalf("Do after the timeout: %v, want ErrClosed", err)
		}
	}
	fresh, err := NewMesh(m)
	if err != nil {
		t.Fatal(err)
	}
	runCase(t, rng, fresh, m, callCase{collective.AllReduce, collective.Sum, tensor.Float64}, 513, 0, false)
}
