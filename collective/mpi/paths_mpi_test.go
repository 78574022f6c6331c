//go:build mpi

package mpi

import (
	"os"
	"testing"

	"github.com/mgla/mgla/collective"
)

// TestPlacementRule: where the local work goes, and whether a call goes
// through MPI's blocking call, for every combination of what the ranks
// agreed on and the environment's switches.
func TestPlacementRule(t *testing.T) {
	saved := agreed
	t.Cleanup(func() { agreed = saved })
	cases := []struct {
		env                    string // MGLA_MPI_LOCAL_WORK
		singleCopy, spare      bool
		bcast, gather, reduce  placement
		pipelinedBcastOf1MiB   bool
		pipelinedBcastOf256KiB bool
	}{
		{"", false, false, placePipeline, placeBefore, placeAfter, true, false},
		{"", false, true, placeAfter, placeBefore, placeAfter, false, false},
		{"", true, false, placeDuring, placeDuring, placeAfter, false, false},
		{"", true, true, placeDuring, placeDuring, placeAfter, false, false},
		{"after", true, false, placeAfter, placeAfter, placeAfter, false, false},
		{"before", false, false, placeBefore, placeBefore, placeBefore, false, false},
		{"during", false, false, placeDuring, placeDuring, placeDuring, false, false},
		{"pipeline", true, true, placePipeline, placeAfter, placeAfter, true, false},
	}
	for _, tc := range cases {
		t.Setenv("MGLA_MPI_LOCAL_WORK", tc.env)
		agreed.singleCopy, agreed.spare = tc.singleCopy, tc.spare
		for kind, want := range map[collective.Kind]placement{collective.Bcast: tc.bcast, collective.Gather: tc.gather, collective.Reduce: tc.reduce} {
			if got := localPlacement(kind); got != want {
				t.Errorf("MGLA_MPI_LOCAL_WORK=%q single copy %v spare %v: %v goes %d, want %d", tc.env, tc.singleCopy, tc.spare, kind, got, want)
			}
		}
		if ok, chunk := pipelined(collective.Bcast, 1<<17, 1<<20); ok != tc.pipelinedBcastOf1MiB || ok && chunk != pipelineChunk/8 {
			t.Errorf("MGLA_MPI_LOCAL_WORK=%q single copy %v spare %v: a Bcast of 1 MiB pipelined %v in chunks of %d", tc.env, tc.singleCopy, tc.spare, ok, chunk)
		}
		if ok, _ := pipelined(collective.Bcast, 1<<15, 1<<18); ok != tc.pipelinedBcastOf256KiB {
			t.Errorf("MGLA_MPI_LOCAL_WORK=%q: a Bcast of 256 KiB pipelined %v", tc.env, ok)
		}
	}
	// Large broadcasts get larger chunks, at most maxPipelineChunks.
	t.Setenv("MGLA_MPI_LOCAL_WORK", "pipeline")
	if _, chunk := pipelined(collective.Bcast, 1<<30/8, 1<<30); (1<<30/8+chunk-1)/chunk > maxPipelineChunks {
		t.Errorf("a Bcast of 1 GiB goes in chunks of %d elements: more than %d", chunk, maxPipelineChunks)
	}

	t.Setenv("MGLA_MPI_LOCAL_WORK", "")
	for _, tc := range []struct {
		env      string // MGLA_MPI_BLOCKING ("unset": not set)
		multiple bool
		kind     collective.Kind
		bytes    int
		want     bool
	}{
		{"unset", true, collective.ReduceScatter, 1 << 20, true},
		{"unset", true, collective.ReduceScatter, 1<<20 - 1, false},
		{"unset", false, collective.ReduceScatter, 1 << 30, false},
		{"unset", true, collective.Bcast, 1 << 30, false},
		{"none", true, collective.ReduceScatter, 1 << 30, false},
		{"Bcast, gather", true, collective.Gather, 1 << 20, true},
		{"Bcast, gather", true, collective.Bcast, 1 << 20, true},
		{"Bcast, gather", true, collective.ReduceScatter, 1 << 20, false},
		{"bcast", false, collective.Bcast, 1 << 20, false},
	} {
		t.Setenv("MGLA_MPI_BLOCKING", tc.env)
		if tc.env == "unset" {
			os.Unsetenv("MGLA_MPI_BLOCKING")
		}
		agreed.multiple = tc.multiple
		if got := blocking(tc.kind, tc.bytes); got != tc.want {
			t.Errorf("MGLA_MPI_BLOCKING=%q multiple %v: %v of %d bytes blocking %v, want %v", tc.env, tc.multiple, tc.kind, tc.bytes, got, tc.want)
		}
	}
}
