package main

import (
	"slices"
	"testing"
)

func TestCheckFlags(t *testing.T) {
	for _, tc := range []struct {
		name       string
		reps       int
		ops, paths string
		wantErr    bool
	}{
		{"the defaults", 3, "transfer,potrf,potrs1,potrs256,potri,syevd-values,syevd-vectors", "mg,mgla,auto,single,dn,graph", false},
		{"one rep", 1, "potrf", "mg", false},
		{"spaces and empty entries", 1, " potrf , potri,", "mg,,dn", false},
		{"nothing", 1, "", "", false},
		{"no reps", 0, "potrf", "mg", true},
		{"negative reps", -1, "potrf", "mg", true},
		{"unknown op", 3, "potrf,potrs", "mg", true},
		{"unknown path", 3, "potrf", "mg,cusolver", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := checkFlags(tc.reps, tc.ops, tc.paths); (err != nil) != tc.wantErr {
				t.Errorf("checkFlags(%d, %q, %q) = %v, want error %v", tc.reps, tc.ops, tc.paths, err, tc.wantErr)
			}
		})
	}
}

func TestSplitGPUCounts(t *testing.T) {
	for _, tc := range []struct {
		counts       []int
		ngpu         int
		run, skipped []int
	}{
		{[]int{1, 2, 4}, 8, []int{1, 2, 4}, nil},
		{[]int{1, 2, 4}, 2, []int{1, 2}, []int{4}},
		{[]int{4, 1, 8}, 1, []int{1}, []int{4, 8}},
		{nil, 4, nil, nil},
	} {
		run, skipped := splitGPUCounts(tc.counts, tc.ngpu)
		if !slices.Equal(run, tc.run) || !slices.Equal(skipped, tc.skipped) {
			t.Errorf("splitGPUCounts(%v, %d) = %v, %v, want %v, %v", tc.counts, tc.ngpu, run, skipped, tc.run, tc.skipped)
		}
	}
}
