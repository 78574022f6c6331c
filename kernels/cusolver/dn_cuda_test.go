//go:build mglacuda

package cusolver

import (
	"fmt"
	"testing"
	"time"
	"unsafe"
)

// TestDn runs the dense single-GPU equivalents on device 0; the n = 1537
// cases use leading dimensions larger than n.
func TestDn(t *testing.T) {
	gpus(t)
	dn, err := NewDn(0)
	if err != nil {
		t.Fatalf("NewDn: %v", err)
	}
	defer func() {
		if err := dn.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	sizes, _ := sizesTiles()
	for _, p := range precs {
		for _, n := range sizes {
			t.Run(fmt.Sprintf("%s/n=%d", p.name, n), func(t *testing.T) {
				lda, ldb := n, n
				if n%2 == 1 {
					lda, ldb = n+7, n+3
				}
				checkDn(t, dn, p, n, lda, ldb)
			})
		}
	}
}

func checkDn(t *testing.T, dn *Dn, p prec, n, lda, ldb int) {
	rng := newRNG(t)
	a := randHPD(rng, n, p)
	da := newLdmat(t, 0, p.dt, a, lda)
	defer da.free()

	start := time.Now()
	if err := dn.Potrf(p.dt, n, da.p, lda); err != nil {
		t.Fatalf("Potrf: %v", err)
	}
	tPotrf := time.Since(start)
	logUpper(t, "potrf", a, da.get(t))
	for _, nrhs := range []int{1, 7} {
		b := randMat(rng, n, nrhs, p)
		db := newLdmat(t, 0, p.dt, b, ldb)
		if err := dn.Potrs(p.dt, n, nrhs, da.p, lda, db.p, ldb); err != nil {
			db.free()
			t.Fatalf("Potrs(nrhs=%d): %v", nrhs, err)
		}
		x := db.get(t)
		db.free()
		checkRatio(t, fmt.Sprintf("potrs nrhs=%d ‖B−AX‖", nrhs), solveRatio(a, x, b, p.eps))
	}

	if err := dn.Potri(p.dt, n, da.p, lda); err != nil {
		t.Fatalf("Potri: %v", err)
	}
	checkRatio(t, "potri ‖I−A·Ainv‖", inverseRatio(a, hermFromLower(da.get(t)), p.eps))

	rs := ElemSize(p.dt)
	if !p.real {
		rs /= 2
	}
	wdev, err := Malloc(0, n*rs)
	if err != nil {
		t.Fatalf("Malloc: %v", err)
	}
	defer Free(0, wdev)
	readW := func() []float64 {
		buf := make([]byte, n*rs)
		if err := MemcpyDtoH(0, unsafe.Pointer(&buf[0]), wdev, len(buf)); err != nil {
			t.Fatalf("MemcpyDtoH: %v", err)
		}
		dt := precs[1].dt
		if rs == 4 {
			dt = precs[0].dt
		}
		v := decode(dt, buf)
		w := make([]float64, n)
		for i := range w {
			w[i] = real(v[i])
		}
		return w
	}
	da.put(t, a)
	if err := dn.Syevd(p.dt, n, da.p, lda, wdev, false); err != nil {
		t.Fatalf("Syevd(values): %v", err)
	}
	w1 := readW()
	da.put(t, a)
	start = time.Now()
	if err := dn.Syevd(p.dt, n, da.p, lda, wdev, true); err != nil {
		t.Fatalf("Syevd(vectors): %v", err)
	}
	tSyevd := time.Since(start)
	w2 := readW()
	checkEig(t, a, da.get(t), w1, w2, p.eps)

	k := 700
	bad := a.clone()
	bad.set(k, k, -1)
	da.put(t, bad)
	checkNotPD(t, dn.Potrf(p.dt, n, da.p, lda), k+1)
	t.Logf("potrf %v, syevd(vectors) %v", tPotrf, tSyevd)
}

// TestDnMemoryFlat: 200 Potrf+Potrs on one Dn allocate nothing more: the
// device memory that the package holds (heldBytes) stays the same.
func TestDnMemoryFlat(t *testing.T) {
	gpus(t)
	dn, err := NewDn(0)
	if err != nil {
		t.Fatalf("NewDn: %v", err)
	}
	defer dn.Close()
	p := precs[1]
	const n, nrhs = 1537, 7
	rng := newRNG(t)
	a := randHPD(rng, n, p)
	b := randMat(rng, n, nrhs, p)
	da := newLdmat(t, 0, p.dt, a, n)
	defer da.free()
	db := newLdmat(t, 0, p.dt, b, n)
	defer db.free()
	iter := func() {
		da.put(t, a)
		db.put(t, b)
		if err := dn.Potrf(p.dt, n, da.p, n); err != nil {
			t.Fatalf("Potrf: %v", err)
		}
		if err := dn.Potrs(p.dt, n, nrhs, da.p, n, db.p, n); err != nil {
			t.Fatalf("Potrs: %v", err)
		}
	}
	for i := 0; i < 3; i++ {
		iter()
	}
	held0 := heldOn([]int{0})
	for i := 0; i < 200; i++ {
		iter()
	}
	held1 := heldOn([]int{0})
	checkRatio(t, "potrs after 200 rounds", solveRatio(a, db.get(t), b, p.eps))
	checkHeldFlat(t, []int{0}, held0, held1)
}

// TestRuntimeHelpers exercises the cudart helpers on every device.
func TestRuntimeHelpers(t *testing.T) {
	ng := gpus(t)
	for d := 0; d < ng; d++ {
		f, tot, err := MemGetInfo(d)
		if err != nil || f <= 0 || tot < f {
			t.Fatalf("MemGetInfo(%d) = %d, %d, %v", d, f, tot, err)
		}
		const nb = 1 << 20
		held0 := heldBytes(d)
		p, err := Malloc(d, nb)
		if err != nil {
			t.Fatalf("Malloc(%d): %v", d, err)
		}
		if got := heldBytes(d) - held0; got != nb {
			t.Errorf("device %d: Malloc(%d) counted as %d bytes held", d, nb, got)
		}
		src := make([]byte, nb)
		for i := range src {
			src[i] = byte(i*7 + d)
		}
		if err := MemcpyHtoD(d, p, unsafe.Pointer(&src[0]), nb); err != nil {
			t.Fatalf("MemcpyHtoD: %v", err)
		}
		if err := Synchronize(d); err != nil {
			t.Fatalf("Synchronize: %v", err)
		}
		dst := make([]byte, nb)
		if err := MemcpyDtoH(d, unsafe.Pointer(&dst[0]), p, nb); err != nil {
			t.Fatalf("MemcpyDtoH: %v", err)
		}
		for i := range dst {
			if dst[i] != src[i] {
				t.Fatalf("device %d: byte %d = %d, want %d", d, i, dst[i], src[i])
			}
		}
		if err := Memset(d, p, 0, nb); err != nil {
			t.Fatalf("Memset: %v", err)
		}
		if err := Free(d, p); err != nil {
			t.Fatalf("Free: %v", err)
		}
		if got := heldBytes(d); got != held0 {
			t.Errorf("device %d: %d bytes held after Free, want %d", d, got, held0)
		}
		t.Logf("device %d: %d of %d bytes free", d, f, tot)
	}
	if _, err := Malloc(0, 1<<62); err == nil {
		t.Errorf("Malloc of 4 EiB: no error")
	} else {
		t.Logf("expected error: %v", err)
	}
}
