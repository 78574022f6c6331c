package lapack

import (
	"runtime"
	"sync"

	"github.com/mgla/mgla/kernels/cpubackend"
)

// Pure-Go complex matrix multiply. Blocks of op(A) and op(B) are packed
// (applying alpha and the conjugation, and widening complex64 to complex128)
// into contiguous micro-panels, and a 2×2 register-blocked kernel accumulates
// in complex128. Large products are split between GOMAXPROCS goroutines.

const (
	zMR = 2   // micro-panel rows of op(A)
	zNR = 2   // micro-panel columns of op(B)
	zKC = 256 // depth of a packed block
	zMC = 96  // rows of a packed A block
	zNC = 512 // columns of a packed B block

	zgemmSmall    = 24 * 24 * 24 // below this m·n·k the unpacked loops are used
	zgemmParallel = 96 * 96 * 96 // above this m·n·k the work is split
)

// Complex is the set of complex storage types of Zgemm and Ztrsm. complex64
// data is widened to complex128 as it is read and rounded once as it is
// written, so the arithmetic is complex128 for both.
type Complex interface{ complex64 | complex128 }

var zpackPool = sync.Pool{New: func() any {
	s := make([]complex128, zMC*zKC+zKC*zNC)
	return &s
}}

// Zgemm computes C = alpha·op(A)·op(B) + beta·C (BLAS zgemm) for
// column-major matrices, element (i, j) of X at x[i+j*ldx]: C is m×n, op(A)
// m×k and op(B) k×n, and op(X) is X, or Xᴴ (the conjugate transpose) when
// its flag tA or tB is set. Each leading dimension is at least max(1, rows
// of the stored matrix). Only the m×n block of c is written; when beta is
// zero it is not read, so NaNs already in C do not propagate.
//
// Storage may be complex64 or complex128 (see Complex). Blocks of op(A) and
// op(B) are packed, with alpha and the conjugation applied, into contiguous
// micro-panels multiplied by a 2×2 register kernel; products with
// m·n·k ≥ 2·96³ are split between up to GOMAXPROCS goroutines, and products
// below 24³ use plain loops. With the openblas build tag complex128 products
// from 24³ on run through OpenBLAS's zgemm instead. It needs no workspace
// from the caller (packing buffers are pooled).
func Zgemm[S Complex](tA, tB bool, m, n, k int, alpha complex128, a []S, lda int, b []S, ldb int, beta complex128, c []S, ldc int) {
	checkGemm("Zgemm", tA, tB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
	if m == 0 || n == 0 {
		return
	}
	if k > 0 && alpha != 0 {
		if a128, ok := any(a).([]complex128); ok {
			if m*n*k >= zgemmSmall && cpubackend.ZgemmNative(tA, tB, m, n, k, alpha, a128, lda, any(b).([]complex128), ldb, beta, any(c).([]complex128), ldc) {
				return
			}
		}
	}
	if beta != 1 {
		for j := 0; j < n; j++ {
			cc := c[j*ldc : j*ldc+m]
			if beta == 0 {
				clear(cc)
			} else {
				for i := range cc {
					cc[i] = S(beta * complex128(cc[i]))
				}
			}
		}
	}
	if alpha == 0 || k == 0 {
		return
	}
	work := m * n * k
	if work < zgemmSmall {
		zgemmSmallLoops(tA, tB, m, n, k, alpha, a, lda, b, ldb, c, ldc)
		return
	}
	nw := runtime.GOMAXPROCS(0)
	if w := work / zgemmParallel; w < nw {
		nw = max(1, w)
	}
	if nw == 1 {
		zgemmSerial(tA, tB, m, n, k, alpha, a, lda, b, ldb, c, ldc)
		return
	}
	// Split the larger of m and n into nw pieces (multiples of the micro tile).
	var wg sync.WaitGroup
	if n >= m {
		step := ((n+nw-1)/nw + zNR - 1) / zNR * zNR
		for j0 := 0; j0 < n; j0 += step {
			nb := min(step, n-j0)
			boff := j0 * ldb
			if tB {
				boff = j0
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				zgemmSerial(tA, tB, m, nb, k, alpha, a, lda, b[boff:], ldb, c[j0*ldc:], ldc)
			}()
		}
	} else {
		step := ((m+nw-1)/nw + zMR - 1) / zMR * zMR
		for i0 := 0; i0 < m; i0 += step {
			mb := min(step, m-i0)
			aoff := i0
			if tA {
				aoff = i0 * lda
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				zgemmSerial(tA, tB, mb, n, k, alpha, a[aoff:], lda, b, ldb, c[i0:], ldc)
			}()
		}
	}
	wg.Wait()
}

// zgemmSmallLoops accumulates C += alpha·op(A)·op(B) without packing.
func zgemmSmallLoops[S Complex](tA, tB bool, m, n, k int, alpha complex128, a []S, lda int, b []S, ldb int, c []S, ldc int) {
	opB := func(p, j int) complex128 {
		if tB {
			return conj(complex128(b[j+p*ldb]))
		}
		return complex128(b[p+j*ldb])
	}
	if !tA {
		for j := 0; j < n; j++ {
			cc := c[j*ldc : j*ldc+m]
			for p := 0; p < k; p++ {
				t := alpha * opB(p, j)
				if t == 0 {
					continue
				}
				ac := a[p*lda : p*lda+m]
				for i, v := range ac {
					cc[i] = S(complex128(cc[i]) + complex128(v)*t)
				}
			}
		}
		return
	}
	for j := 0; j < n; j++ {
		for i := 0; i < m; i++ {
			ac := a[i*lda : i*lda+k]
			var s complex128
			if tB {
				for p, v := range ac {
					s += conj(complex128(v)) * conj(complex128(b[j+p*ldb]))
				}
			} else {
				bc := b[j*ldb : j*ldb+k]
				for p, v := range ac {
					s += conj(complex128(v)) * complex128(bc[p])
				}
			}
			c[i+j*ldc] = S(complex128(c[i+j*ldc]) + alpha*s)
		}
	}
}

func zgemmSerial[S Complex](tA, tB bool, m, n, k int, alpha complex128, a []S, lda int, b []S, ldb int, c []S, ldc int) {
	bufp := zpackPool.Get().(*[]complex128)
	defer zpackPool.Put(bufp)
	buf := *bufp
	ap := buf[:zMC*zKC]
	bp := buf[zMC*zKC:]
	for jc := 0; jc < n; jc += zNC {
		nb := min(zNC, n-jc)
		for pc := 0; pc < k; pc += zKC {
			kb := min(zKC, k-pc)
			zpackB(tB, kb, nb, b, ldb, pc, jc, bp)
			for ic := 0; ic < m; ic += zMC {
				mb := min(zMC, m-ic)
				zpackA(tA, mb, kb, alpha, a, lda, ic, pc, ap)
				zmacro(mb, nb, kb, ap, bp, c[ic+jc*ldc:], ldc)
			}
		}
	}
}

// zpackA packs alpha·op(A)[i0:i0+mb, p0:p0+kb] into row micro-panels of zMR:
// element (r, p) of panel q is at ap[(q*kb+p)*zMR + r]. Missing rows are 0.
func zpackA[S Complex](tA bool, mb, kb int, alpha complex128, a []S, lda, i0, p0 int, ap []complex128) {
	for q := 0; q*zMR < mb; q++ {
		pan := ap[q*kb*zMR : (q+1)*kb*zMR]
		i := i0 + q*zMR
		rows := min(zMR, mb-q*zMR)
		if !tA {
			if rows == zMR {
				for p := 0; p < kb; p++ {
					off := i + (p0+p)*lda
					x := a[off : off+2 : off+2]
					pan[2*p] = alpha * complex128(x[0])
					pan[2*p+1] = alpha * complex128(x[1])
				}
			} else {
				for p := 0; p < kb; p++ {
					pan[2*p] = alpha * complex128(a[i+(p0+p)*lda])
					pan[2*p+1] = 0
				}
			}
		} else {
			// op(A)(i, p) = conj(a[p + i*lda])
			c0 := a[p0+i*lda : p0+i*lda+kb]
			if rows == zMR {
				c1 := a[p0+(i+1)*lda : p0+(i+1)*lda+kb]
				for p := range kb {
					pan[2*p] = alpha * conj(complex128(c0[p]))
					pan[2*p+1] = alpha * conj(complex128(c1[p]))
				}
			} else {
				for p := range kb {
					pan[2*p] = alpha * conj(complex128(c0[p]))
					pan[2*p+1] = 0
				}
			}
		}
	}
}

// zpackB packs op(B)[p0:p0+kb, j0:j0+nb] into column micro-panels of zNR:
// element (p, s) of panel q is at bp[(q*kb+p)*zNR + s]. Missing columns are 0.
func zpackB[S Complex](tB bool, kb, nb int, b []S, ldb, p0, j0 int, bp []complex128) {
	for q := 0; q*zNR < nb; q++ {
		pan := bp[q*kb*zNR : (q+1)*kb*zNR]
		j := j0 + q*zNR
		cols := min(zNR, nb-q*zNR)
		if !tB {
			c0 := b[p0+j*ldb : p0+j*ldb+kb]
			if cols == zNR {
				c1 := b[p0+(j+1)*ldb : p0+(j+1)*ldb+kb]
				for p := range kb {
					pan[2*p] = complex128(c0[p])
					pan[2*p+1] = complex128(c1[p])
				}
			} else {
				for p := range kb {
					pan[2*p] = complex128(c0[p])
					pan[2*p+1] = 0
				}
			}
		} else {
			// op(B)(p, j) = conj(b[j + p*ldb])
			if cols == zNR {
				for p := 0; p < kb; p++ {
					off := j + (p0+p)*ldb
					x := b[off : off+2 : off+2]
					pan[2*p] = conj(complex128(x[0]))
					pan[2*p+1] = conj(complex128(x[1]))
				}
			} else {
				for p := 0; p < kb; p++ {
					pan[2*p] = conj(complex128(b[j+(p0+p)*ldb]))
					pan[2*p+1] = 0
				}
			}
		}
	}
}

// zmacro multiplies the packed mb×kb and kb×nb blocks into C (accumulating).
func zmacro[S Complex](mb, nb, kb int, ap, bp []complex128, c []S, ldc int) {
	for q := 0; q*zNR < nb; q++ {
		bpan := bp[q*kb*zNR : (q+1)*kb*zNR]
		j := q * zNR
		cols := min(zNR, nb-j)
		for r := 0; r*zMR < mb; r++ {
			apan := ap[r*kb*zMR : (r+1)*kb*zMR]
			i := r * zMR
			rows := min(zMR, mb-i)
			c00, c10, c01, c11 := zkernel22(kb, apan, bpan)
			off := i + j*ldc
			if rows == 2 && cols == 2 {
				x := c[off : off+2 : off+2]
				x[0] = S(complex128(x[0]) + c00)
				x[1] = S(complex128(x[1]) + c10)
				y := c[off+ldc : off+ldc+2 : off+ldc+2]
				y[0] = S(complex128(y[0]) + c01)
				y[1] = S(complex128(y[1]) + c11)
				continue
			}
			c[off] = S(complex128(c[off]) + c00)
			if rows == 2 {
				c[off+1] = S(complex128(c[off+1]) + c10)
			}
			if cols == 2 {
				c[off+ldc] = S(complex128(c[off+ldc]) + c01)
				if rows == 2 {
					c[off+ldc+1] = S(complex128(c[off+ldc+1]) + c11)
				}
			}
		}
	}
}

// zkernel22 returns the 2×2 block Σ_p a(:,p)·b(p,:) of packed micro-panels.
func zkernel22(kb int, a, b []complex128) (c00, c10, c01, c11 complex128) {
	a = a[:2*kb]
	b = b[:2*kb]
	for p := 0; p < kb; p++ {
		a0, a1 := a[2*p], a[2*p+1]
		b0, b1 := b[2*p], b[2*p+1]
		c00 += a0 * b0
		c10 += a1 * b0
		c01 += a0 * b1
		c11 += a1 * b1
	}
	return
}
