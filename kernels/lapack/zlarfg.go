package lapack

import "math"

// zlarfg generates H = I − tau·v·vᴴ with Hᴴ·[alpha; x] = [beta; 0], beta
// real; on return *alpha = beta and x holds v[1:]. Unlike the real case the
// reflector is not the identity when x = 0 but alpha has an imaginary part.
func zlarfg(alpha *complex128, x []complex128) complex128 {
	xnorm := znrm2(x)
	alphr, alphi := real(*alpha), imag(*alpha)
	if xnorm == 0 && alphi == 0 {
		return 0
	}
	const safmin = 0x1p-1022 / dlamchE
	beta := -math.Copysign(dlapy3(alphr, alphi, xnorm), alphr)
	knt := 0
	if math.Abs(beta) < safmin {
		rsafmn := 1 / safmin
		for {
			knt++
			for i := range x {
				x[i] *= complex(rsafmn, 0)
			}
			beta *= rsafmn
			alphr *= rsafmn
			alphi *= rsafmn
			if math.Abs(beta) >= safmin || knt >= 20 {
				break
			}
		}
		xnorm = znrm2(x)
		beta = -math.Copysign(dlapy3(alphr, alphi, xnorm), alphr)
	}
	tau := complex((beta-alphr)/beta, -alphi/beta)
	s := 1 / complex(alphr-beta, alphi)
	for i := range x {
		x[i] *= s
	}
	for ; knt > 0; knt-- {
		beta *= safmin
	}
	*alpha = complex(beta, 0)
	return tau
}

func dlapy3(x, y, z float64) float64 {
	w := max(math.Abs(x), math.Abs(y), math.Abs(z))
	if w == 0 {
		return math.Abs(x) + math.Abs(y) + math.Abs(z)
	}
	x /= w
	y /= w
	z /= w
	return w * math.Sqrt(x*x+y*y+z*z)
}
