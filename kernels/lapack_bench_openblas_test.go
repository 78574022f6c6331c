//go:build openblas

package kernels

import (
	"fmt"
	"sort"
	"testing"
	"time"
)

// BenchmarkAgainstLAPACK times the kernels API of the openblas build against
// the same LAPACK routines called directly (dpotrf/dpotrs, dpotri, dsyevd),
// alternating in one process (each first in every other rep), float64. Both sides start from a copy of the
// input, as the ops do to keep their inputs untouched. x-vs-lapack is the
// LAPACK time over the mgla time (1 = parity, target ≥ 0.91): medians of
// the reps.
//
//	CGO_LDFLAGS='-llapacke -lopenblas' go test -tags openblas -run '^$' -bench AgainstLAPACK -benchtime 1x ./kernels/
func BenchmarkAgainstLAPACK(b *testing.B) {
	type path func(a, work, rhs, rwork []float64, w []float64, n, nrhs int) error
	cases := []struct {
		name    string
		n, nrhs int
		lapack  path
		mgla    path
	}{}
	potrs := func(n, nrhs int) {
		cases = append(cases, struct {
			name    string
			n, nrhs int
			lapack  path
			mgla    path
		}{fmt.Sprintf("Potrs/N=%d/nrhs=%d", n, nrhs), n, nrhs,
			func(a, work, rhs, rwork, _ []float64, n, nrhs int) error {
				copy(work, a)
				copy(rwork, rhs)
				if _, info := potrfNativeF64(n, work, n); info != 0 {
					return fmt.Errorf("dpotrf info %d", info)
				}
				potrsNativeF64(n, nrhs, work, n, rwork, n)
				return nil
			},
			func(a, work, rhs, rwork, _ []float64, n, nrhs int) error {
				copy(work, a)
				copy(rwork, rhs)
				if err := Potrf(n, work, n); err != nil {
					return err
				}
				return Potrs(n, nrhs, work, n, rwork, n)
			}})
	}
	for _, n := range []int{1000, 2000} {
		potrs(n, 1)
		potrs(n, 64)
	}
	for _, n := range []int{1000, 2000} {
		cases = append(cases, struct {
			name    string
			n, nrhs int
			lapack  path
			mgla    path
		}{fmt.Sprintf("Potri/N=%d", n), n, 0,
			func(a, work, _, _, _ []float64, n, _ int) error {
				copy(work, a)
				if _, info := potrfNativeF64(n, work, n); info != 0 {
					return fmt.Errorf("dpotrf info %d", info)
				}
				if _, info := potriNativeF64(n, work, n); info != 0 {
					return fmt.Errorf("dpotri info %d", info)
				}
				return nil
			},
			func(a, work, _, _, _ []float64, n, _ int) error {
				copy(work, a)
				if err := Potrf(n, work, n); err != nil {
					return err
				}
				return Potri(n, work, n)
			}})
		cases = append(cases, struct {
			name    string
			n, nrhs int
			lapack  path
			mgla    path
		}{fmt.Sprintf("Syevd/N=%d", n), n, 0,
			func(a, work, _, _, w []float64, n, _ int) error {
				copy(work, a)
				_, err := syevdNative(n, work, n, w, true)
				return err
			},
			func(a, work, _, _, w []float64, n, _ int) error {
				copy(work, a)
				return Syevd(n, work, n, w, true)
			}})
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			a := randSPD(c.n, 1)
			work := make([]float64, len(a))
			rhs := make([]float64, c.n*max(c.nrhs, 1))
			for i := range rhs {
				rhs[i] = float64(i%7) - 3
			}
			rwork := make([]float64, len(rhs))
			w := make([]float64, c.n)
			var tl, tm []time.Duration
			run := func(p path, into *[]time.Duration) {
				t0 := time.Now()
				if err := p(a, work, rhs, rwork, w, c.n, c.nrhs); err != nil {
					b.Fatal(err)
				}
				*into = append(*into, time.Since(t0))
			}
			run(c.lapack, &tl) // warm-up
			run(c.mgla, &tm)
			tl, tm = tl[:0], tm[:0]
			reps := max(b.N, 5)
			for r := range reps { // alternate which goes first
				if r%2 == 0 {
					run(c.lapack, &tl)
					run(c.mgla, &tm)
				} else {
					run(c.mgla, &tm)
					run(c.lapack, &tl)
				}
			}
			ml, mm := median(tl), median(tm)
			b.ReportMetric(float64(ml.Microseconds())/1e3, "lapack_ms")
			b.ReportMetric(float64(mm.Microseconds())/1e3, "mgla_ms")
			b.ReportMetric(float64(ml)/float64(mm), "x-vs-lapack")
		})
	}
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
