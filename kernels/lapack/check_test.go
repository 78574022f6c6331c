package lapack

import (
	"slices"
	"testing"
)

// TestBadArguments checks that each routine panics with a message naming it
// on dimensions its slices cannot hold, before it changes anything.
func TestBadArguments(t *testing.T) {
	const n = 4
	buf := func(k int) []complex128 {
		s := make([]complex128, k)
		for i := range s {
			s[i] = complex(float64(i), 1)
		}
		return s
	}
	a, b, c := buf(n*n), buf(n*n), buf(n*n)
	ar, br, cr := realOf(a), realOf(b), realOf(c)
	d, e, tau := make([]float64, n), make([]float64, n-1), buf(n-1)
	taur := make([]float64, n-1)
	a0, c0, cr0 := slices.Clone(a), slices.Clone(c), slices.Clone(cr)
	for _, tc := range []struct {
		routine string
		call    func()
	}{
		{"Zgemm", func() { Zgemm(false, false, n, n, n, 1, a, n-1, b, n, 0, c, n) }},
		{"Zgemm", func() { Zgemm(true, false, n, n, n+1, 1, a, n, b, n, 0, c, n) }},
		{"Zgemm", func() { Zgemm(false, false, n, n+1, n, 1, a, n, b, n, 0, c, n) }},
		{"Dgemm", func() { Dgemm(false, true, n, n, n, 1, ar, n, br, n-1, 0, cr, n) }},
		{"Dgemm", func() { Dgemm(false, false, -1, n, n, 1, ar, n, br, n, 0, cr, n) }},
		{"Zpotrf", func() { Zpotrf(n, c, n-1) }},
		{"Zpotrf", func() { Zpotrf(n+1, c, n+1) }},
		{"Ztrsm", func() { Ztrsm(false, n, n+1, a, n, c, n) }},
		{"Ztrtri", func() { Ztrtri(n, c, n, make([]complex128, n*n/4-1)) }},
		{"Zlauum", func() { Zlauum(n, c[:n*n-1], n) }},
		{"Dsytrd", func() { Dsytrd(n, cr, n, d, e, taur[:n-2]) }},
		{"Zhetrd", func() { Zhetrd(n, c, n, d[:n-1], e, tau) }},
		{"Zunmtr", func() { Zunmtr(n, n, a, n, tau[:n-2], c, n) }},
		{"Zunmtr", func() { Zunmtr(n, n, a, n, tau, c, n-1) }},
		{"Dstedc", func() { Dstedc(n, d, e[:n-2], cr, n) }},
		{"Dstedc", func() { Dstedc(n, d, e, cr, n-1) }},
	} {
		mustPanic(t, tc.routine, tc.call)
		if !slices.Equal(a, a0) || !slices.Equal(c, c0) || !slices.Equal(cr, cr0) {
			t.Fatalf("%s: a rejected call changed its arguments", tc.routine)
		}
	}
}
