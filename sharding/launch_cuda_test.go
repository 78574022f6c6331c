//go:build mglacuda

package sharding

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/mgla/mgla/internal/stalec"
	"github.com/mgla/mgla/kernels/ptx"
	"github.com/stretchr/testify/require"
	"gorgonia.org/cu"
)

// launchViaCuEnv set to 1 makes TestLaunchKeepsGoPointersOutOfCMemory
// launch through gorgonia.org/cu's Function.Launch (its child process).
const launchViaCuEnv = "MGLA_TEST_LAUNCH_VIA_CU"

// mgla's kernels go through launchKernel, which stores no pointers into C
// memory. The test launches a small kernel many times while the garbage
// collector runs without a pause, each launch just after leaving the
// address of a dropped Go object in the C heap blocks that a launch of that
// many arguments mallocs (stalec). A pointer stored over such a word while
// the collector marks stops the process with "found bad pointer in Go
// heap". A child process runs the same loop through gorgonia.org/cu's
// Function.Launch and must die that way: that shows the words reach the
// launcher's memory, so that this process's pass means something (on one
// H100: 9 of 10 children stopped, most within a second; a child that does
// not is tried again, up to three).
func TestLaunchKeepsGoPointersOutOfCMemory(t *testing.T) {
	const (
		launches   = 50000            // about 1 s on an H100
		childLimit = 10 * time.Second // a child stops within 1 s in most runs
		children   = 3
	)
	viaCu := os.Getenv(launchViaCuEnv) == "1"
	mesh, err := GPUMesh(0)
	require.NoError(t, err)
	dev := mesh.devices[0]

	// stale is an address inside a Go object that is dropped at once, made
	// again every 1000 launches: the collector frees each soon, and a
	// later allocation may reuse its pages, so a fresh one keeps the
	// address in freed memory often enough.
	var stale uintptr
	dropObject := func() {
		obj := make([]byte, 8<<20)
		stale = uintptr(unsafe.Pointer(&obj[0])) + uintptr(len(obj)) - 8192
	}
	dropObject()
	var stop atomic.Bool
	var collecting sync.WaitGroup
	collecting.Go(func() {
		for !stop.Load() {
			runtime.GC()
		}
	})
	err = onDevice(dev, func() error {
		g, err := deviceState(dev.ID)
		if err != nil {
			return err
		}
		buf, err := cu.MemAlloc(8)
		if err != nil {
			return err
		}
		defer func() { _ = cu.MemFree(buf) }()
		name := ptx.Transpose[8]
		args := []uint64{uint64(buf), 1, uint64(buf), 1, 1, 1} // out, ldo, in, ldi, rows, cols
		launch := func() error { return launchKernel(g.fns[name], g.stream, 1, 1, 32, 8, args) }
		if viaCu {
			mod, err := cu.LoadData(ptx.Source)
			if err != nil {
				return err
			}
			fn, err := mod.Function(name)
			if err != nil {
				return err
			}
			params := make([]unsafe.Pointer, len(args))
			for i := range args {
				params[i] = unsafe.Pointer(&args[i])
			}
			launch = func() error { return fn.Launch(1, 1, 1, 32, 8, 1, 0, g.stream, params) }
		}
		more := func(i int) bool { return i < launches }
		if viaCu { // until the process stops, within childLimit
			deadline := time.Now().Add(childLimit)
			more = func(int) bool { return time.Now().Before(deadline) }
		}
		for i := 0; more(i); i++ {
			if i%1000 == 999 {
				dropObject()
			}
			stalec.LeaveWords(stale, 8*len(args), 4)
			if err := launch(); err != nil {
				return err
			}
			if i%1024 == 1023 {
				if err := cu.Synchronize(); err != nil {
					return err
				}
			}
		}
		return cu.Synchronize()
	})
	stop.Store(true)
	collecting.Wait()
	require.NoError(t, err)
	if viaCu {
		t.Fatalf("%v of launches through cu's Function.Launch did not stop the process: the stale words did not reach its memory, so the parent test checks nothing", childLimit)
	}

	// Most children stop within a second; now and then one goes its whole
	// limit without stopping (why was not found), so up to three are tried.
	for range children {
		child := exec.Command(os.Args[0], "-test.run=^TestLaunchKeepsGoPointersOutOfCMemory$", "-test.count=1")
		child.Env = append(os.Environ(), launchViaCuEnv+"=1")
		out, err := child.CombinedOutput()
		if strings.Contains(string(out), "found bad pointer in Go heap") {
			return
		}
		require.Error(t, err, "the child (cu's Function.Launch) passed:\n%s", out)
		require.Contains(t, string(out), "did not stop the process", "the child (cu's Function.Launch) failed otherwise")
	}
	t.Fatalf("%d children launching through cu's Function.Launch for %v each did not stop: the stale words did not reach its memory, so this test checked nothing", children, childLimit)
}
