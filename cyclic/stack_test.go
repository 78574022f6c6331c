package cyclic

import "testing"

// TestStackRowsPlans checks both plans element by element against the
// definition: element (i, j) of block d is element (d·rows+i, j) of the
// stacked matrix, for every small shape and device count.
func TestStackRowsPlans(t *testing.T) {
	for ndev := 1; ndev <= 5; ndev++ {
		for rows := 1; rows <= 4; rows++ {
			for cols := 1; cols <= 4; cols++ {
				h := ndev * rows
				stacked := make([]float64, h*cols)
				for k := range stacked {
					stacked[k] = float64(k + 1)
				}
				split, err := SplitRowsPlan(rows, cols, ndev)
				if err != nil {
					t.Fatal(err)
				}
				flat := make([]float64, h*cols)
				src, dst := make([][]float64, ndev), make([][]float64, ndev)
				for d := range ndev {
					src[d] = stacked
					dst[d] = flat[d*rows*cols : (d+1)*rows*cols]
				}
				if err := ExecuteHost(split, src, dst); err != nil {
					t.Fatal(err)
				}
				for d := range ndev {
					for i := range rows {
						for j := range cols {
							if got, want := flat[d*rows*cols+i+j*rows], stacked[d*rows+i+j*h]; got != want {
								t.Fatalf("split %d×%d on %d: block %d (%d,%d) = %v, want %v", rows, cols, ndev, d, i, j, got, want)
							}
						}
					}
				}
				stack, err := StackRowsPlan(rows, cols, ndev)
				if err != nil {
					t.Fatal(err)
				}
				back := make([]float64, h*cols)
				for d := range ndev {
					src[d], dst[d] = flat[d*rows*cols:(d+1)*rows*cols], back
				}
				if err := ExecuteHost(stack, src, dst); err != nil {
					t.Fatal(err)
				}
				for k := range back {
					if back[k] != stacked[k] {
						t.Fatalf("stack %d×%d on %d: element %d = %v, want %v", rows, cols, ndev, k, back[k], stacked[k])
					}
				}
				for _, m := range stack.Moves {
					if m.DstDev != 0 {
						t.Fatalf("stack plan writes device %d", m.DstDev)
					}
				}
			}
		}
	}
}
