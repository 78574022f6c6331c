package builders

import (
	"fmt"
)

// catch turns a panic raised while building a graph (gorgonia.Must on an op
// that rejected its inputs) into an error; errors keep their identity for
// errors.Is, so mgla.ErrBadInput still matches.
func catch(err *error) {
	r := recover()
	if r == nil {
		return
	}
	if e, ok := r.(error); ok {
		*err = fmt.Errorf("building the graph: %w", e)
		return
	}
	*err = fmt.Errorf("building the graph: %v", r)
}
