//go:build mglacuda

package cusolver

import (
	"fmt"
	"testing"
)

// TestWorkspaceQueries checks that the matrix-free workspace queries give
// the sizes that the solver calls ask for with real matrices: one pair of
// handles runs the calls (whose sizes they cache), another answers the
// queries, for every precision, on 1..min(4, GPUs) GPUs.
func TestWorkspaceQueries(t *testing.T) {
	ng := gpus(t)
	const n, tile = 1537, 256
	for ndev := 1; ndev <= min(4, ng); ndev++ {
		for _, p := range precs {
			t.Run(fmt.Sprintf("ndev=%d/%s", ndev, p.name), func(t *testing.T) {
				run, query := newMgT(t, seq(ndev)), newMgT(t, seq(ndev))
				es := int64(ElemSize(p.dt))
				a := randHPD(newRNG(t), n, p)
				da := newDmat(t, seq(ndev), p.dt, a, tile, false)
				defer da.free()
				b := newDmat(t, seq(ndev), p.dt, randMat(newRNG(t), n, 1, p), 1, false)
				defer b.free()
				if err := run.Potrf(p.dt, n, tile, da.ptrs); err != nil {
					t.Fatalf("Potrf: %v", err)
				}
				if err := run.PotrsBlock(p.dt, n, 1, tile, 1, da.ptrs, b.ptrs); err != nil {
					t.Fatalf("Potrs: %v", err)
				}
				if err := run.Potri(p.dt, n, tile, da.ptrs); err != nil {
					t.Fatalf("Potri: %v", err)
				}
				da.put(t, a)
				if err := run.Syevd(p.dt, n, tile, da.ptrs, make([]float64, n), true); err != nil {
					t.Fatalf("Syevd: %v", err)
				}
				ct, _, _, _, _, _ := dtypeInfo(p.dt)
				for _, c := range []struct {
					name  string
					key   lworkKey
					query func() (int64, error)
				}{
					{"potrf", lworkKey{op: opPotrf, ctype: ct, n: n, tile: tile},
						func() (int64, error) { return query.PotrfWorkspace(p.dt, n, tile) }},
					{"potrs", lworkKey{op: opPotrs, ctype: ct, n: n, tile: tile, nrhs: 1, tileB: 1},
						func() (int64, error) { return query.PotrsWorkspace(p.dt, n, 1, tile, 1) }},
					{"potri", lworkKey{op: opPotri, ctype: ct, n: n, tile: tile},
						func() (int64, error) { return query.PotriWorkspace(p.dt, n, tile) }},
					{"syevd", lworkKey{op: opSyevdVectors, ctype: ct, n: n, tile: tile},
						func() (int64, error) { return query.SyevdWorkspace(p.dt, n, tile, true) }},
				} {
					got, err := c.query()
					if err != nil {
						t.Fatalf("%s query: %v", c.name, err)
					}
					if want := run.lworks[c.key] * es; got != want {
						t.Errorf("%s: query %d bytes, the call used %d", c.name, got, want)
					}
					t.Logf("%s workspace at n=%d, T=%d: %d bytes per GPU", c.name, n, tile, got)
				}
			})
		}
	}
}

// TestDnWorkspaceQueries is TestWorkspaceQueries for the single-GPU handle.
func TestDnWorkspaceQueries(t *testing.T) {
	gpus(t)
	const n = 1537
	for _, p := range precs {
		t.Run(p.name, func(t *testing.T) {
			run, query := newDnT(t), newDnT(t)
			a := randHPD(newRNG(t), n, p)
			da := newLdmat(t, 0, p.dt, a, n)
			defer da.free()
			w, err := Malloc(0, 8*n)
			if err != nil {
				t.Fatal(err)
			}
			defer Free(0, w)
			if err := run.Potrf(p.dt, n, da.p, n); err != nil {
				t.Fatalf("Potrf: %v", err)
			}
			if err := run.Potri(p.dt, n, da.p, n); err != nil {
				t.Fatalf("Potri: %v", err)
			}
			da.put(t, a)
			if err := run.Syevd(p.dt, n, da.p, n, w, true); err != nil {
				t.Fatalf("Syevd: %v", err)
			}
			ct, es, _, _, _, _ := dtypeInfo(p.dt)
			dev, host, err := query.PotrfWorkspace(p.dt, n)
			if want := run.sizes[dnKey{dnPotrf, ct, n, n}]; err != nil || (dnSize{dev, host}) != want {
				t.Errorf("potrf: query %d, %d bytes (%v), the call used %v", dev, host, err, want)
			}
			lw, err := query.PotriWorkspace(p.dt, n)
			if want := run.sizes[dnKey{dnPotri, ct, n, n}].dev * int64(es); err != nil || lw != want {
				t.Errorf("potri: query %d bytes (%v), the call used %d", lw, err, want)
			}
			dev, host, err = query.SyevdWorkspace(p.dt, n, true)
			if want := run.sizes[dnKey{dnSyevdVectors, ct, n, n}]; err != nil || (dnSize{dev, host}) != want {
				t.Errorf("syevd: query %d, %d bytes (%v), the call used %v", dev, host, err, want)
			}
		})
	}
}

func newMgT(t *testing.T, devs []int) *Mg {
	t.Helper()
	m, err := NewMg(devs)
	if err != nil {
		t.Fatalf("NewMg: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func newDnT(t *testing.T) *Dn {
	t.Helper()
	d, err := NewDn(0)
	if err != nil {
		t.Fatalf("NewDn: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}
