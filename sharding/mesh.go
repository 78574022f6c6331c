package sharding

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"gorgonia.org/tensor"
)

// DeviceKind is the kind of the devices of a mesh.
type DeviceKind int

const (
	// CPU is a virtual device in host memory.
	CPU DeviceKind = iota
	// GPU is an NVIDIA GPU (mglacuda build tag).
	GPU
)

func (k DeviceKind) String() string {
	if k == GPU {
		return "gpu"
	}
	return "cpu"
}

// Device is one device of a mesh: its kind and its ordinal (the CUDA device
// ordinal for GPUs, the index for virtual CPU devices).
type Device struct {
	Kind DeviceKind
	ID   int
}

func (d Device) String() string { return fmt.Sprintf("%v:%d", d.Kind, d.ID) }

// ErrNoGPU is returned when a GPU mesh is asked for and no GPU (or no CUDA
// backend) is available.
var ErrNoGPU = errors.New("sharding: no GPU available")

// ErrMeshMismatch is returned when values on different meshes meet.
var ErrMeshMismatch = errors.New("sharding: mesh mismatch")

// ErrBadInput is the module's bad-input sentinel, mgla.ErrBadInput: it
// lives here, below the graph ops, so that their run-time checks of the
// values that reach them (a value bound with Let in a shape or of a kind
// the op cannot take) match it as the builders' errors do.
var ErrBadInput = errors.New("mgla: bad input")

// Mesh is an ordered set of devices of one kind that shard a matrix.
type Mesh struct {
	id      uint64
	devices []Device
	mem     backend
}

var meshIDs atomic.Uint64

// CPUMesh returns a mesh of n virtual CPU devices.
func CPUMesh(n int) (*Mesh, error) {
	if n < 1 {
		return nil, fmt.Errorf("sharding: a CPU mesh needs at least one device, got %d", n)
	}
	devs := make([]Device, n)
	for i := range devs {
		devs[i] = Device{Kind: CPU, ID: i}
	}
	return newMesh(devs, hostBackend{}), nil
}

func newMesh(devs []Device, mem backend) *Mesh {
	return &Mesh{id: meshIDs.Add(1), devices: devs, mem: mem}
}

// defaultGPUMesh is set by the cuda build to a function returning a mesh of
// every visible GPU (or ErrNoGPU).
var defaultGPUMesh func() (*Mesh, error)

var (
	defaultOnce sync.Once
	defaultMesh *Mesh
	defaultErr  error
)

// DefaultMesh is every visible GPU when the CUDA backend is built (a
// mglacuda binary starts only where a GPU is: see gpu_cuda.go), otherwise
// a CPU mesh of one device. It is made once per process,
// so solver handles cached for it are reused by every graph.
func DefaultMesh() (*Mesh, error) {
	defaultOnce.Do(func() {
		if defaultGPUMesh != nil {
			if m, err := defaultGPUMesh(); err == nil {
				defaultMesh = m
				return
			}
		}
		defaultMesh, defaultErr = CPUMesh(1)
	})
	return defaultMesh, defaultErr
}

// Size is the number of devices.
func (m *Mesh) Size() int { return len(m.devices) }

// Validate reports a mesh that holds nothing: nil, or a zero Mesh (not made
// by CPUMesh, GPUMesh or New).
func (m *Mesh) Validate() error {
	if m == nil {
		return fmt.Errorf("sharding: nil mesh")
	}
	if m.Size() == 0 || m.mem == nil {
		return fmt.Errorf("sharding: zero Mesh (make one with CPUMesh or GPUMesh)")
	}
	return nil
}

// Kind is the kind of the mesh's devices (CPU for a zero Mesh, which has
// none).
func (m *Mesh) Kind() DeviceKind {
	if len(m.devices) == 0 {
		return CPU
	}
	return m.devices[0].Kind
}

// Devices returns a copy of the device list.
func (m *Mesh) Devices() []Device { return append([]Device(nil), m.devices...) }

// Device returns the i-th device of the mesh.
func (m *Mesh) Device(i int) Device { return m.devices[i] }

// Same reports whether two meshes hold the same devices in the same order.
func (m *Mesh) Same(o *Mesh) bool {
	if m == o {
		return true
	}
	if m == nil || o == nil || len(m.devices) != len(o.devices) {
		return false
	}
	for i := range m.devices {
		if m.devices[i] != o.devices[i] {
			return false
		}
	}
	return true
}

func (m *Mesh) String() string {
	if n := len(m.devices); n > meshStringDevices {
		// A mesh of thousands of virtual devices (cpu:100000) would print
		// them all into every message that names it.
		parts := make([]string, 0, meshStringDevices/2+2)
		for _, d := range m.devices[:meshStringDevices/2] {
			parts = append(parts, d.String())
		}
		parts = append(parts, "…", m.devices[n-1].String())
		return fmt.Sprintf("mesh[%s (%d devices)]", strings.Join(parts, ","), n)
	}
	return "mesh[" + m.DevicesKey() + "]"
}

// meshStringDevices is how many devices a mesh's String lists whole; a
// larger mesh shows its first half of them, the last and the count.
const meshStringDevices = 16

// Key identifies the mesh in caches (stable for the mesh's lifetime).
func (m *Mesh) Key() uint64 { return m.id }

// DevicesKey names the mesh's devices in order ("gpu:1,gpu:0"): meshes
// with the same key are Same, and share what is cached by device list (a
// cuSolverMg handle, NCCL communicators).
func (m *Mesh) DevicesKey() string {
	parts := make([]string, len(m.devices))
	for i, d := range m.devices {
		parts[i] = d.String()
	}
	return strings.Join(parts, ",")
}

// Dtypes are the element types sharded tensors compute with: every kernel
// and op supports them.
var Dtypes = []tensor.Dtype{tensor.Float32, tensor.Float64, tensor.Complex64, tensor.Complex128}

// IntDtypes are the integer element types a sharded tensor may also hold, for
// storage and movement only: New, Put, Load, Gather, Relayout, ExecutePlan
// and the collectives move them; kernels and arithmetic (AddScaled, the
// triangle and diagonal routines) reject them. Go's int and uint are as wide
// as a pointer: 64 bits on amd64 and arm64 (engines that name widths move
// them as int64 and uint64 there). GPU meshes hold those of 4 and 8 bytes
// (CheckGPUDtype).
var IntDtypes = []tensor.Dtype{tensor.Int, tensor.Int8, tensor.Int16, tensor.Int32, tensor.Int64,
	tensor.Uint, tensor.Uint8, tensor.Uint16, tensor.Uint32, tensor.Uint64}

// CheckDtype reports an error for element types other than Dtypes, the ones
// kernels compute with.
func CheckDtype(dt tensor.Dtype) error {
	for _, d := range Dtypes {
		if d == dt {
			return nil
		}
	}
	return fmt.Errorf("sharding: unsupported dtype %v (want float32, float64, complex64 or complex128)", dt)
}

// CheckStorageDtype reports an error for element types a sharded tensor
// cannot hold: anything but Dtypes and IntDtypes.
func CheckStorageDtype(dt tensor.Dtype) error {
	if _, ok := hostTypes[dt]; ok {
		return nil
	}
	return fmt.Errorf("sharding: unsupported dtype %v (want float32, float64, complex64, complex128 or a fixed-size integer type)", dt)
}

// CheckStorage reports an error for element types the mesh's tensors cannot
// hold: CheckGPUDtype on GPU meshes, CheckStorageDtype on the others.
func (m *Mesh) CheckStorage(dt tensor.Dtype) error {
	if m.Kind() == GPU {
		return CheckGPUDtype(dt)
	}
	return CheckStorageDtype(dt)
}

// CheckGPUDtype reports an error for element types GPU meshes cannot hold:
// besides what CheckStorageDtype rejects, the 1- and 2-byte integers
// (int8, uint8, int16, uint16), which have no device kernels for the moves
// between host and device layouts (mgla's kernels handle 4-, 8- and 16-byte
// elements). CPU meshes hold them.
func CheckGPUDtype(dt tensor.Dtype) error {
	if err := CheckStorageDtype(dt); err != nil {
		return err
	}
	if size := dt.Size(); size < 4 {
		return fmt.Errorf("sharding: unsupported dtype %v on GPU meshes (%d-byte elements; GPU meshes hold elements of 4, 8 or 16 bytes: use int32 or wider)", dt, size)
	}
	return nil
}

// perDevice runs fn for every device index concurrently.
func perDevice(n int, fn func(d int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for d := range n {
		wg.Add(1)
		go func() { defer wg.Done(); errs[d] = fn(d) }()
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
