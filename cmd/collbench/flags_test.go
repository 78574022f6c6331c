package main

import "testing"

func TestCheckKinds(t *testing.T) {
	for _, tc := range []struct {
		list    string
		wantErr bool
	}{
		{"", false},
		{"allreduce", false},
		{"allreduce,bcast", false},
		{"allreduce,bcast,", false},
		{"barrier,sendrecv,scan,scatter,gather,reduce,alltoall,reducescatter,allgather", false},
		{"allreduc", true},
		{"allreduce,bcst", true},
		{"Allreduce", true},
		{"allreduce, bcast", true},
		{",", true},
	} {
		if err := checkKinds(tc.list); (err != nil) != tc.wantErr {
			t.Errorf("checkKinds(%q) = %v, want error %v", tc.list, err, tc.wantErr)
		}
	}
}

func TestCheckSizes(t *testing.T) {
	for _, tc := range []struct {
		lo, hi  int
		wantErr bool
	}{
		{8, 64 << 20, false},
		{1 << 20, 1 << 20, false},
		{1 << 20, 1 << 10, true},
		{16, 8, true},
	} {
		if err := checkSizes(tc.lo, tc.hi); (err != nil) != tc.wantErr {
			t.Errorf("checkSizes(%d, %d) = %v, want error %v", tc.lo, tc.hi, err, tc.wantErr)
		}
	}
}
