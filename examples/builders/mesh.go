package builders

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mgla/mgla/sharding"
)

// MeshUsage describes the values ParseMesh accepts, for flag help texts.
const MeshUsage = "devices: default (every GPU of a GPU build, else one CPU device), cpu, cpu:N (N virtual CPU devices), gpu (every GPU), gpu:0,1 (those GPUs)"

// ParseMesh turns a -mesh flag into a mesh:
//
//	"" or "default"  sharding.DefaultMesh (every GPU when built with -tags mglacuda and a GPU is present, else one CPU device)
//	"cpu"            one virtual CPU device
//	"cpu:4"          four virtual CPU devices
//	"gpu"            every visible GPU (-tags mglacuda builds)
//	"gpu:0,1"        GPUs 0 and 1 (-tags mglacuda builds)
func ParseMesh(spec string) (*sharding.Mesh, error) {
	kind, arg, hasArg := strings.Cut(strings.TrimSpace(strings.ToLower(spec)), ":")
	switch kind {
	case "", "default":
		if hasArg {
			return nil, fmt.Errorf("mesh %q: the default mesh takes no argument", spec)
		}
		return sharding.DefaultMesh()
	case "cpu":
		if !hasArg {
			return sharding.CPUMesh(1)
		}
		n, err := strconv.Atoi(arg)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("mesh %q: want cpu:N with N ≥ 1 virtual devices", spec)
		}
		return sharding.CPUMesh(n)
	case "gpu":
		var ids []int
		if hasArg {
			seen := map[int]bool{}
			for _, f := range strings.Split(arg, ",") {
				id, err := strconv.Atoi(strings.TrimSpace(f))
				if err != nil || id < 0 {
					return nil, fmt.Errorf("mesh %q: want gpu:I,J,… with device ordinals ≥ 0", spec)
				}
				if seen[id] {
					return nil, fmt.Errorf("mesh %q: GPU %d is listed twice", spec, id)
				}
				seen[id] = true
				ids = append(ids, id)
			}
		}
		return gpuMesh(ids)
	}
	return nil, fmt.Errorf("mesh %q: unknown device kind %q (%s)", spec, kind, MeshUsage)
}

// gpuMesh is the mesh of the given GPUs, every visible GPU when ids is
// empty. In a binary built without -tags mglacuda, sharding.GPUMesh fails with
// an error saying so (it matches sharding.ErrNoGPU).
func gpuMesh(ids []int) (*sharding.Mesh, error) {
	m, err := sharding.GPUMesh(ids...)
	if err != nil {
		return nil, fmt.Errorf("mesh gpu: %w", err)
	}
	return m, nil
}
