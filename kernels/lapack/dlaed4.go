package lapack

import "math"

// secularRoot finds the i-th smallest root λ of the secular equation
//
//	f(λ) = 1 + ρ·Σ_j w_j²/(dlam_j − λ) = 0,
//
// dlam strictly increasing, ρ > 0, all w_j ≠ 0 (dlaed4). The root lies in
// (dlam_i, dlam_{i+1}), or (dlam_{k-1}, dlam_{k-1}+ρ‖w‖²] for the last one. It
// is computed as λ = origin + τ with origin the closer pole, so that the
// differences delta_j = dlam_j − λ = (dlam_j − origin) − τ, returned in delta,
// are accurate. The iteration fits a two-pole rational model at each step
// (quadratically convergent) and is safeguarded by a bracket with bisection.
func secularRoot(i int, dlam, w []float64, rho float64, delta []float64) (float64, bool) {
	k := len(dlam)
	if k == 1 {
		t := rho * w[0] * w[0]
		delta[0] = -t
		return dlam[0] + t, true
	}
	var origin, lo, hi, tau float64
	if i < k-1 {
		gap := dlam[i+1] - dlam[i]
		mid := gap / 2
		g := 1 / rho
		for j := 0; j < k; j++ {
			g += w[j] * w[j] / ((dlam[j] - dlam[i]) - mid)
		}
		if g > 0 {
			origin, lo, hi, tau = dlam[i], 0, mid, mid
		} else {
			origin, lo, hi, tau = dlam[i+1], -mid, 0, -mid
		}
	} else {
		var s float64
		for _, v := range w {
			s += v * v
		}
		origin, lo, hi, tau = dlam[k-1], 0, rho*s, rho*s
	}
	rhoinv := 1 / rho
	const maxIter = 2000
	for iter := 0; iter < maxIter; iter++ {
		for j := 0; j < k; j++ {
			delta[j] = (dlam[j] - origin) - tau
		}
		// ψ: poles left of the root (j ≤ i), φ: poles right of it.
		var psi, dpsi, phi, dphi, erretm float64
		last := i
		for j := 0; j <= last; j++ {
			if delta[j] == 0 {
				return origin + tau, true
			}
			t := w[j] / delta[j]
			psi += w[j] * t
			dpsi += t * t
			erretm += psi
		}
		erretm = math.Abs(erretm)
		for j := k - 1; j > last; j-- {
			if delta[j] == 0 {
				return origin + tau, true
			}
			t := w[j] / delta[j]
			phi += w[j] * t
			dphi += t * t
			erretm += phi
		}
		g := rhoinv + psi + phi
		erretm = 8*(phi-psi) + erretm + 2*rhoinv + 3*math.Abs(tau)*(dpsi+dphi)
		if math.Abs(g) <= dlamchE*erretm {
			return origin + tau, true
		}
		if g < 0 {
			lo = tau
		} else {
			hi = tau
		}
		if hi-lo <= 2*dlamchE*math.Max(math.Abs(lo), math.Abs(hi)) {
			return origin + tau, true
		}
		// Two-pole rational model: C + B1/(p1−s) + B2/(p2−s) with p1, p2 the
		// differences to the two poles nearest the root, s the step in τ.
		var p1, p2, b1, b2, c float64
		if i < k-1 {
			p1, p2 = delta[i], delta[i+1]
			b1 = dpsi * p1 * p1
			b2 = dphi * p2 * p2
			c = rhoinv + (psi - dpsi*p1) + (phi - dphi*p2)
		} else {
			// Last root: the pole k-1 exactly, the rest modeled at pole k-2.
			p1, p2 = delta[k-1], delta[k-2]
			t := w[k-1] / p1
			b1 = w[k-1] * w[k-1]
			rpsi := psi - w[k-1]*t
			rdpsi := dpsi - t*t
			b2 = rdpsi * p2 * p2
			c = rhoinv + (rpsi - rdpsi*p2)
		}
		a := c*(p1+p2) + b1 + b2
		b := p1 * p2 * g
		next := math.NaN()
		inside := func(s float64) bool {
			t := tau + s
			return t > lo && t < hi
		}
		if c == 0 {
			if a != 0 && inside(b/a) {
				next = tau + b/a
			}
		} else {
			disc := a*a - 4*b*c
			if disc < 0 {
				disc = 0
			}
			qq := 0.5 * (a + math.Copysign(math.Sqrt(disc), a))
			r1 := qq / c
			r2 := math.NaN()
			if qq != 0 {
				r2 = b / qq
			}
			in1 := !math.IsNaN(r1) && inside(r1)
			in2 := !math.IsNaN(r2) && inside(r2)
			switch {
			case in1 && in2:
				if math.Abs(r1) < math.Abs(r2) {
					next = tau + r1
				} else {
					next = tau + r2
				}
			case in1:
				next = tau + r1
			case in2:
				next = tau + r2
			}
		}
		if math.IsNaN(next) {
			next = lo + (hi-lo)/2
		}
		if next == tau {
			return origin + tau, true
		}
		tau = next
	}
	for j := 0; j < k; j++ {
		delta[j] = (dlam[j] - origin) - tau
	}
	return origin + tau, false
}
