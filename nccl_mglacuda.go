//go:build mglacuda

package mgla

// In the CUDA build, collectives on GPU meshes (NewMeshComm of a GPU mesh)
// run on NCCL: importing the engine sets collective's GPU-mesh hook.
import _ "github.com/mgla/mgla/collective/nccl"
