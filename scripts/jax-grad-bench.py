#!/usr/bin/env python3
"""JAX on one GPU: the baseline of ops' backward benchmarks (BENCHMARKS.md,
gradient cost).

Times, in float64, what a JAX user writes for the costs of
ops/bench_grad_test.go, forward alone and forward with the gradient:

  potrs     Σ w∘cho_solve(cho_factor(A), y), the gradient wrt A and y
            (BenchmarkPotrsBackward)
  cholesky  Σ W∘cholesky(A), the gradient wrt A (BenchmarkCholeskyBackward)
  all       Σ cho_solve(L, y)² + logdet(A) + Σ A⁻¹ + Σ W∘L, L = cholesky(A),
            A⁻¹ = cho_solve(L, I), logdet = 2 Σ log diag(L), the gradient
            wrt A and y (BenchmarkBackwardAll)
  gp        ½·yᵀA⁻¹y + ½·logdet(A) from one cho_factor, the gradient wrt A
            (BenchmarkGPBackward)
  gpkernel  the same cost of K(θ) = σ²·exp(−‖xᵢ − xⱼ‖²/(2ℓ²)) + σₙ²·I made
            from N points of dimension 3 (uniform in [0, 10)³), the
            gradient wrt θ = (log ℓ, log σ², log σₙ²) at (0, 0, log 0.1)
            (BenchmarkGPKernelBackward)
  gpkernelard  the same with a length scale per dimension, the gradient
            wrt (log ℓ₁, log ℓ₂, log ℓ₃, log σ², log σₙ²) at (0, 0, 0, 0,
            log 0.1) (BenchmarkGPKernelBackwardARD)

A is diagonally dominant (N on the diagonal, uniform [-1, 1) off it,
symmetric), w, W and y normal, made on the GPU. Every function is jitted;
one warm-up call, then the median of -reps calls, each ended by
block_until_ready. Printed per op and N: fwd-ms, fwd+bwd-ms and their
ratio, as the Go benchmarks report them.

  python3 jax-grad-bench.py -n 4096,8192
"""
import argparse
import statistics
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", default="4096,8192")
    ap.add_argument("-ops", default="potrs,cholesky,all,gp,gpkernel,gpkernelard")
    ap.add_argument("-reps", type=int, default=5)
    args = ap.parse_args()

    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import jax.scipy.linalg as jsl

    print(f"jax {jax.__version__} on {jax.devices()[0].device_kind}, float64", flush=True)

    def inputs(n):
        k1, k2, k3 = jax.random.split(jax.random.PRNGKey(1), 3)
        off = jax.random.uniform(k1, (n, n), jnp.float64, -1, 1)
        a = jnp.tril(off, -1)
        a = a + a.T + n * jnp.eye(n, dtype=jnp.float64)
        w = jax.random.normal(k2, (n, n), jnp.float64)
        y = jax.random.normal(k3, (n,), jnp.float64)
        return a, w, y

    def potrs(a, y, w):
        x = jsl.cho_solve(jsl.cho_factor(a, lower=True), y)
        return jnp.sum(w[:, 0] * x)

    def cholesky(a, y, w):
        return jnp.sum(w * jnp.linalg.cholesky(a))

    def every(a, y, w):
        l = jnp.linalg.cholesky(a)
        x = jsl.cho_solve((l, True), y)
        inv = jsl.cho_solve((l, True), jnp.eye(a.shape[0], dtype=a.dtype))
        logdet = 2 * jnp.sum(jnp.log(jnp.diag(l)))
        return jnp.sum(x * x) + logdet + jnp.sum(inv) + jnp.sum(w * l)

    def gp(a, y, w):
        c = jsl.cho_factor(a, lower=True)
        logdet = 2 * jnp.sum(jnp.log(jnp.diag(c[0])))
        return 0.5 * (jnp.dot(y, jsl.cho_solve(c, y)) + logdet)

    def gpkernel(theta, x, y):
        ell, sig, noise = jnp.exp(theta[0]), jnp.exp(theta[1]), jnp.exp(theta[2])
        d2 = jnp.sum((x[:, None, :] - x[None, :, :]) ** 2, axis=-1)
        k = sig * jnp.exp(-d2 / (2 * ell * ell)) + noise * jnp.eye(x.shape[0], dtype=x.dtype)
        return gp(k, y, None)

    def gpkernelard(theta, x, y):
        xs = x / jnp.exp(theta[:3])
        sig, noise = jnp.exp(theta[3]), jnp.exp(theta[4])
        d2 = jnp.sum((xs[:, None, :] - xs[None, :, :]) ** 2, axis=-1)
        k = sig * jnp.exp(-d2 / 2) + noise * jnp.eye(x.shape[0], dtype=x.dtype)
        return gp(k, y, None)

    costs = {"potrs": (potrs, (0, 1)), "cholesky": (cholesky, 0), "all": (every, (0, 1)), "gp": (gp, 0)}

    def timed(fn, ins, reps):
        out = []
        for k in range(reps + 1):
            t0 = time.perf_counter()
            jax.block_until_ready(fn(*ins))
            if k > 0:
                out.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(out)

    for n in [int(x) for x in args.n.split(",")]:
        a, w, y = inputs(n)
        jax.block_until_ready((a, w, y))
        for op in args.ops.split(","):
            if op in ("gpkernel", "gpkernelard"):
                f, wrt = {"gpkernel": gpkernel, "gpkernelard": gpkernelard}[op], 0
                x = jax.random.uniform(jax.random.PRNGKey(3), (n, 3), jnp.float64, 0, 10)
                theta = [0.0, 0.0, jnp.log(0.1)] if op == "gpkernel" else [0.0, 0.0, 0.0, 0.0, jnp.log(0.1)]
                ins = (jnp.array(theta, jnp.float64), x, y)
            else:
                f, wrt = costs[op]
                ins = (a, y, w)
            fwd = jax.jit(f)
            full = jax.jit(jax.value_and_grad(f, argnums=wrt))
            tf = timed(fwd, ins, args.reps)
            tfb = timed(full, ins, args.reps)
            print(f"{op:11s} N={n:6d} jax 1 GPU  fwd-ms {tf:9.2f}  fwd+bwd-ms {tfb:9.2f}  fwd+bwd/fwd {tfb / tf:6.2f}", flush=True)


if __name__ == "__main__":
    main()
