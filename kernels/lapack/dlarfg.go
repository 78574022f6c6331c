package lapack

import "math"

// dlarfg generates an elementary reflector H = I − tau·v·vᵀ with
// H·[alpha; x] = [beta; 0]; on return *alpha = beta and x holds v[1:].
func dlarfg(alpha *float64, x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	xnorm := nrm2(x)
	if xnorm == 0 {
		return 0
	}
	const safmin = 0x1p-1022 / dlamchE
	beta := -math.Copysign(math.Hypot(*alpha, xnorm), *alpha)
	knt := 0
	if math.Abs(beta) < safmin {
		rsafmn := 1 / safmin
		for {
			knt++
			for i := range x {
				x[i] *= rsafmn
			}
			beta *= rsafmn
			*alpha *= rsafmn
			if math.Abs(beta) >= safmin || knt >= 20 {
				break
			}
		}
		xnorm = nrm2(x)
		beta = -math.Copysign(math.Hypot(*alpha, xnorm), *alpha)
	}
	tau := (beta - *alpha) / beta
	s := 1 / (*alpha - beta)
	for i := range x {
		x[i] *= s
	}
	for ; knt > 0; knt-- {
		beta *= safmin
	}
	*alpha = beta
	return tau
}
