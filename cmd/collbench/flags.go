package main

// The flags' checks, without the mpi build tag so that their tests run in
// every build.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mgla/mgla/collective"
)

// kinds are the collectives timed, by the names of the table.
var kinds = []struct {
	name string
	kind collective.Kind
}{
	{"allreduce", collective.AllReduce}, {"allgather", collective.AllGather},
	{"reducescatter", collective.ReduceScatter}, {"alltoall", collective.AllToAll},
	{"bcast", collective.Bcast}, {"reduce", collective.Reduce}, {"gather", collective.Gather},
	{"scatter", collective.Scatter}, {"scan", collective.Scan}, {"sendrecv", collective.SendRecv},
	{"barrier", collective.Barrier},
}

// checkKinds reports an error when list (-kinds: comma-separated, "" for
// all) names a collective that kinds lacks, or none at all.
func checkKinds(list string) error {
	if list == "" {
		return nil
	}
	var known []string
	for _, k := range kinds {
		known = append(known, k.name)
	}
	some := false
	for _, n := range strings.Split(list, ",") {
		if n == "" {
			continue
		}
		some = true
		if !slices.Contains(known, n) {
			return fmt.Errorf("-kinds: no collective %q (%s)", n, strings.Join(known, ", "))
		}
	}
	if !some {
		return fmt.Errorf("-kinds %q names no collective (%s)", list, strings.Join(known, ", "))
	}
	return nil
}

// checkSizes reports an error when the smallest size (-min, bytes) is
// larger than the largest (-max).
func checkSizes(lo, hi int) error {
	if lo > hi {
		return fmt.Errorf("-min (%d bytes) is larger than -max (%d bytes)", lo, hi)
	}
	return nil
}
