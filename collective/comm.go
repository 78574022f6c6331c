package collective

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mgla/mgla/sharding"
	"gorgonia.org/tensor"
)

// Comm is a communicator: Size() ranks that run collectives together.
//
// Every rank must issue the same Calls in the same order (the graph ops make
// that hold by construction); an engine that can see a mismatch reports it as
// ErrMismatch, and one that waits longer than its timeout for a peer returns
// ErrTimeout instead of blocking forever.
type Comm interface {
	// Size is the number of ranks.
	Size() int
	// LocalRanks are the ranks this process drives, in the order of the
	// buffers of a Call: one rank for a process communicator, every rank for
	// a mesh communicator.
	LocalRanks() []int
	// Do runs one collective. It never writes the send buffers.
	Do(c *Call) error
	// Split partitions the ranks: ranks with the same color form a new
	// communicator, ordered by key (ties by rank). color(r) < 0 leaves rank r
	// out. The result holds one communicator per color among the local
	// ranks, in increasing color (at most one for a process communicator).
	Split(color, key func(rank int) int) ([]Comm, error)
	// Close frees the engine's resources; Do on a closed Comm returns
	// ErrClosed. Closing twice is not an error.
	Close() error
}

// A CloseNotifier is a Comm that runs functions when it is closed. Every
// engine of this module implements it; the graph ops use it to close, along
// with a communicator, those they derive from it (the reversed copy that
// Scan's gradient runs on). Derived communicators of a Comm without it stay
// open for the life of the process.
type CloseNotifier interface {
	// OnClose arranges for f to run when the communicator is closed, at
	// once if it already is.
	OnClose(f func())
}

// CloseHooks keeps the functions of OnClose for an engine: Add is OnClose,
// and Close calls Run. The zero value is ready to use.
type CloseHooks struct {
	mu  sync.Mutex
	fns []func()
	ran bool
}

// Add arranges for f to run at Run, or runs it now if Run has been called.
func (h *CloseHooks) Add(f func()) {
	h.mu.Lock()
	if h.ran {
		h.mu.Unlock()
		f()
		return
	}
	h.fns = append(h.fns, f)
	h.mu.Unlock()
}

// Run runs the functions added so far, in order, the first time it is
// called; later calls do nothing.
func (h *CloseHooks) Run() {
	h.mu.Lock()
	fns := h.fns
	h.fns, h.ran = nil, true
	h.mu.Unlock()
	for _, f := range fns {
		f()
	}
}

// Kind names a collective.
type Kind int

const (
	AllReduce     Kind = iota // every rank gets op over all ranks' Count elements
	AllGather                 // every rank gets Size blocks of Count, block r from rank r
	ReduceScatter             // rank r gets block r of op over all ranks' Size·Count elements
	AllToAll                  // block j of rank i's send goes to block i of rank j's receive
	Bcast                     // every rank gets the root's Count elements
	Reduce                    // the root gets op over all ranks; other ranks get zeros
	Gather                    // the root gets Size blocks of Count; other ranks get zeros
	Scatter                   // rank r gets block r of the root's Size·Count elements
	Scan                      // rank r gets op over ranks 0…r (inclusive prefix)
	SendRecv                  // local rank i sends to Dest[i] and receives from Source[i]
	Send                      // send Count elements to Dest[0]
	Recv                      // receive Count elements from Source[0]
	Barrier                   // no data: returns when every rank has entered it
)

var kindNames = [...]string{"AllReduce", "AllGather", "ReduceScatter", "AllToAll", "Bcast", "Reduce",
	"Gather", "Scatter", "Scan", "SendRecv", "Send", "Recv", "Barrier"}

func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// ReduceOp is the reduction of AllReduce, ReduceScatter, Reduce and Scan.
type ReduceOp int

const (
	Sum ReduceOp = iota
	Prod
	Min // real dtypes only (integers and floats; floats as Go's min: NaN wins, -0 < +0)
	Max // real dtypes only (integers and floats; floats as Go's max: NaN wins, -0 < +0)
)

var reduceNames = [...]string{"sum", "prod", "min", "max"}

func (o ReduceOp) String() string {
	if o >= 0 && int(o) < len(reduceNames) {
		return reduceNames[o]
	}
	return fmt.Sprintf("ReduceOp(%d)", int(o))
}

// Call is one collective as every engine sees it.
type Call struct {
	Kind  Kind
	Op    ReduceOp     // AllReduce, ReduceScatter, Reduce, Scan
	Root  int          // Bcast, Reduce, Gather, Scatter
	Dest  []int        // SendRecv and Send: per local rank, the rank sent to
	Src   []int        // SendRecv and Recv: per local rank, the rank received from
	Tag   int          // Send, Recv, SendRecv (≥ 0)
	Dtype tensor.Dtype // element type of every buffer
	Count int          // elements in one rank's block (see Kind)
	// Shape is the shape of this rank's input (for Recv: of what it
	// receives), optional: engines that compare calls across ranks compare
	// it too when it is set, so that calls of one count but different
	// shapes are an ErrMismatch. The graph ops set it.
	Shape tensor.Shape
	// Send and Recv hold one buffer per local rank (Send only for Send,
	// Recv only for Recv, neither for Barrier); SendLen and RecvLen say
	// how many elements each must hold at least.
	Send, Recv []sharding.Buffer
	// Name is what the error messages call this call (the graph op and
	// node, say); empty is fine.
	Name string
	// Differentiated says that the graph built this call's gradient
	// (gorgonia.Grad reached its node from the rank's cost). Engines that
	// compare calls compare it too: a rank whose cost does not depend on a
	// collective that other ranks differentiate would skip the gradient
	// collective they wait in, so that is an ErrMismatch at the forward
	// call, on every rank that takes part in it.
	Differentiated bool
}

// SendLen is the number of elements each local rank's send buffer holds
// (0: no send buffer) on a communicator of size ranks.
func (c *Call) SendLen(size int) int {
	switch c.Kind {
	case ReduceScatter, AllToAll, Scatter:
		return size * c.Count
	case Recv, Barrier:
		return 0
	}
	return c.Count
}

// RecvLen is the number of elements each local rank's receive buffer holds
// (0: no receive buffer).
func (c *Call) RecvLen(size int) int {
	switch c.Kind {
	case AllGather, AllToAll, Gather:
		return size * c.Count
	case Send, Barrier:
		return 0
	}
	return c.Count
}

func (c *Call) String() string {
	name := c.Kind.String()
	if c.Name != "" {
		name = c.Name
	}
	return name
}

// Check validates c for a communicator of the given size whose local ranks
// are local: kinds, roots, peers, dtype, counts and buffer lengths. Engines
// call it first; the errors wrap ErrBadCall.
func (c *Call) Check(size int, local []int) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %v: %s", ErrBadCall, c, fmt.Sprintf(format, args...))
	}
	if c.Kind < AllReduce || c.Kind > Barrier {
		return bad("unknown kind %d", int(c.Kind))
	}
	if c.Kind == Barrier {
		return nil
	}
	if err := CheckDtype(c.Dtype); err != nil {
		return bad("%v", err)
	}
	if c.Count < 0 {
		return bad("negative count %d", c.Count)
	}
	switch c.Kind {
	case AllReduce, ReduceScatter, Reduce, Scan:
		if c.Op < Sum || c.Op > Max {
			return bad("unknown reduction %d", int(c.Op))
		}
		if (c.Op == Min || c.Op == Max) && (c.Dtype == tensor.Complex64 || c.Dtype == tensor.Complex128) {
			return bad("%v of complex values is not defined", c.Op)
		}
	case Bcast, Gather, Scatter:
		if c.Root < 0 || c.Root >= size {
			return bad("root %d outside [0, %d)", c.Root, size)
		}
	}
	if c.Kind == Reduce && (c.Root < 0 || c.Root >= size) {
		return bad("root %d outside [0, %d)", c.Root, size)
	}
	peers := func(what string, ps []int) error {
		if len(ps) != len(local) {
			return bad("%d %s ranks for %d local ranks", len(ps), what, len(local))
		}
		for _, p := range ps {
			if p < 0 || p >= size {
				return bad("%s rank %d outside [0, %d)", what, p, size)
			}
		}
		return nil
	}
	switch c.Kind {
	case SendRecv:
		if err := peers("destination", c.Dest); err != nil {
			return err
		}
		if err := peers("source", c.Src); err != nil {
			return err
		}
	case Send:
		if err := peers("destination", c.Dest); err != nil {
			return err
		}
	case Recv:
		if err := peers("source", c.Src); err != nil {
			return err
		}
	}
	if c.Tag < 0 {
		return bad("negative tag %d", c.Tag)
	}
	buffers := func(what string, bs []sharding.Buffer, n int) error {
		if n == 0 {
			return nil
		}
		if len(bs) != len(local) {
			return bad("%d %s buffers for %d local ranks", len(bs), what, len(local))
		}
		for i, b := range bs {
			if b == nil {
				return bad("nil %s buffer of rank %d", what, local[i])
			}
			if b.Len() < n {
				return bad("%s buffer of rank %d holds %d elements, need %d", what, local[i], b.Len(), n)
			}
		}
		return nil
	}
	if err := buffers("send", c.Send, c.SendLen(size)); err != nil {
		return err
	}
	return buffers("receive", c.Recv, c.RecvLen(size))
}

// CheckDtype reports an error for element types no engine supports. The
// collectives move the float dtypes (sharding.Dtypes) and the integer ones
// (sharding.IntDtypes; Go's int and uint are int64 and uint64 on 64-bit
// platforms); an engine may support fewer (NCCL: 32- and 64-bit integers).
func CheckDtype(dt tensor.Dtype) error { return sharding.CheckStorageDtype(dt) }

// Errors every engine returns (wrapped, with detail); match them with
// errors.Is (through mgla.Cause for errors from a Gorgonia machine).
var (
	// ErrBadCall: a Call that does not fit the communicator (roots, peers,
	// buffer lengths, dtypes).
	ErrBadCall = errors.New("collective: bad call")
	// ErrMismatch: ranks issued different calls (kind, dtype, count, root)
	// at the same point; the error names the ranks that disagree.
	ErrMismatch = errors.New("collective: ranks disagree")
	// ErrTimeout: a rank waited longer than the communicator's timeout for
	// its peers; the error names the call and, where the engine knows them,
	// the ranks that did not arrive.
	ErrTimeout = errors.New("collective: timed out waiting for peers")
	// ErrClosed: the communicator was closed (or broken by an earlier
	// timeout).
	ErrClosed = errors.New("collective: communicator closed")
	// ErrUnavailable: the engine is not built in (build tag) or its library
	// cannot be loaded; the error says which and how to get it.
	ErrUnavailable = errors.New("collective: engine unavailable")
	// ErrEngine: the engine's library reported a failure (MPI, NCCL); the
	// error carries its message.
	ErrEngine = errors.New("collective: engine failure")
)

// DefaultTimeout is how long a rank waits for its peers before ErrTimeout,
// unless the communicator was made with another (engines take it as an
// option). Override at run time with the environment variable
// MGLA_COLLECTIVE_TIMEOUT (a Go duration, "90s").
const DefaultTimeout = 60 * time.Second
