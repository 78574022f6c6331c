#!/usr/bin/env python3
"""JAX on one GPU: the baseline column of mgbench's tables (BENCHMARKS.md).

Times what a JAX user writes for mgla's ops on one GPU, float64 (or
float32), with the flop counts of cmd/mgbench, and appends rows in its CSV
format (cmd/internal/benchcsv: op,dtype,n,nrhs,ndev,tile,path,seconds,
flops,tflops,bytes,gbps; ndev 1, tile 0, path "jax") for cmd/benchreport:

  potrf          jax.scipy.linalg.cho_factor(A, lower=True)
  potrs1/256     jax.scipy.linalg.cho_solve((L, True), B), K = 1 / 256,
                 on the factor (mgbench's potrs also starts from the factor)
  potri          cho_solve((L, True), I): JAX has no potri; this is the
                 inverse from the factor a JAX user writes (2N³ flops of
                 work against potri's 2N³/3; the flop rate below uses
                 potri's count, like mgbench)
  syevd-values   jnp.linalg.eigvalsh(A)
  syevd-vectors  jnp.linalg.eigh(A)

A is cmd/mgbench's matrix (N on the diagonal, a hash of {i, j} in
[-0.5, 0.5) off it: dense, symmetric positive definite), made on the GPU in
one fused kernel. Every op is jitted; one warm-up call, then
the median of -reps timed calls, each ended by block_until_ready. The
matrix is donated where the op would otherwise need a second N×N buffer
(N = 65536 in float64 is 32 GiB). A size that does not fit is printed as
skipped and has no row.

  python3 jax-bench.py -n 32768,65536 -ops potrf,potrs1 -csv out.csv
"""
import argparse
import csv
import statistics
import sys
import time

FLOPS = {
    "potrf": lambda n: n**3 / 3,
    "potrs1": lambda n: 2 * n * n,
    "potrs256": lambda n: 2 * n * n * 256,
    "potri": lambda n: 2 * n**3 / 3,
    "syevd-values": lambda n: 4 * n**3 / 3,
    "syevd-vectors": lambda n: 4.3 * n**3,
}


def spd_at(n, i, j):
    """cmd/mgbench's spdAt in Python integers (uint64 arithmetic)."""
    if i == j:
        return float(n)
    m = (1 << 64) - 1
    a, b = min(i, j), max(i, j)
    h = ((a * 0x9E3779B97F4A7C15) & m) ^ ((b * 0xC2B2AE3D27D4EB4F) & m)
    h ^= h >> 29
    h = (h * 0xBF58476D1CE4E5B9) & m
    h ^= h >> 32
    return (h >> 11) / float(1 << 53) - 0.5


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", default="4096,8192,16384,32768")
    ap.add_argument("-ops", default="potrf,potrs1,potrs256,potri,syevd-values,syevd-vectors")
    ap.add_argument("-dtype", default="float64")
    ap.add_argument("-reps", type=int, default=3)
    ap.add_argument("-max-syevd", type=int, default=16384)
    ap.add_argument("-max-potri", type=int, default=32768)
    ap.add_argument("-csv", default="jax.csv")
    args = ap.parse_args()

    import jax

    if args.dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import jax.scipy.linalg as jsl

    dt = jnp.dtype(args.dtype)
    dev = jax.devices()[0]
    print(f"jax {jax.__version__} on {dev.device_kind}, {args.dtype}", flush=True)

    def spd(n):
        # cmd/mgbench's matrix (spdAt): n on the diagonal, off it a hash of
        # the unordered pair {i, j} in [-0.5, 0.5): dense, as a kernel
        # matrix is (a matrix of many exact zeros lets the GPU's FP64 units
        # draw less power and clock higher: not the same work).
        i = jnp.arange(n, dtype=jnp.uint64)
        a, b = jnp.minimum(i[:, None], i[None, :]), jnp.maximum(i[:, None], i[None, :])
        h = (a * jnp.uint64(0x9E3779B97F4A7C15)) ^ (b * jnp.uint64(0xC2B2AE3D27D4EB4F))
        h = h ^ (h >> jnp.uint64(29))
        h = h * jnp.uint64(0xBF58476D1CE4E5B9)
        h = h ^ (h >> jnp.uint64(32))
        off = (h >> jnp.uint64(11)).astype(jnp.float64) / float(1 << 53) - 0.5
        return jnp.where(a == b, jnp.float64(n), off).astype(dt)

    make = jax.jit(spd, static_argnums=0)
    # The same matrix as cmd/mgbench's spdAt, element for element.
    small = [[spd_at(5, i, j) for j in range(5)] for i in range(5)]
    if not bool(jnp.allclose(make(5), jnp.array(small, dtype=dt), rtol=1e-6)):
        sys.exit("jax-bench: the matrix differs from mgbench's")
    chol = jax.jit(lambda a: jsl.cho_factor(a, lower=True)[0], donate_argnums=0)
    solve = jax.jit(lambda l, b: jsl.cho_solve((l, True), b))
    inv = jax.jit(lambda l: jsl.cho_solve((l, True), jnp.eye(l.shape[0], dtype=l.dtype)))
    eigvals = jax.jit(jnp.linalg.eigvalsh, donate_argnums=0)
    eigh = jax.jit(jnp.linalg.eigh, donate_argnums=0)

    def timed(fn, setup, reps):
        """Median ms of fn(*setup()) over reps calls after one warm-up;
        setup runs outside the timed region (inputs that fn donates)."""
        out = []
        for k in range(reps + 1):
            inputs = setup()
            jax.block_until_ready(inputs)
            t0 = time.perf_counter()
            jax.block_until_ready(fn(*inputs))
            if k > 0:
                out.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(out)

    ops = args.ops.split(",")
    rows = []
    for n in [int(x) for x in args.n.split(",")]:
        factor = None
        for op in ops:
            if op.startswith("syevd") and n > args.max_syevd:
                continue
            if op == "potri" and n > args.max_potri:
                continue
            try:
                if op == "potrf":
                    ms = timed(chol, lambda: (make(n),), args.reps)
                elif op in ("potrs1", "potrs256", "potri"):
                    if factor is None:
                        factor = chol(make(n))
                    if op == "potri":
                        ms = timed(inv, lambda: (factor,), args.reps)
                    else:
                        k = 1 if op == "potrs1" else 256
                        b = jnp.ones((n, k), dtype=dt)
                        ms = timed(solve, lambda: (factor, b), args.reps)
                        del b
                elif op == "syevd-values":
                    ms = timed(eigvals, lambda: (make(n),), args.reps)
                elif op == "syevd-vectors":
                    ms = timed(eigh, lambda: (make(n),), args.reps)
                else:
                    print(f"unknown op {op}", file=sys.stderr)
                    continue
            except Exception as e:  # XLA's out-of-memory is a RuntimeError
                msg = str(e).splitlines()[0][:160]
                print(f"{op} N={n}: skipped: {msg}", flush=True)
                continue
            flops = FLOPS[op](n)
            tf = flops / (ms * 1e-3) / 1e12
            print(f"{op:14s} N={n:6d} jax 1 GPU  {ms:10.3f} ms  {tf:7.2f} TFLOP/s", flush=True)
            name, nrhs = op, 0
            if op.startswith("potrs"):
                name, nrhs = "potrs", int(op[5:])
            rows.append([name, args.dtype, n, nrhs, 1, 0, "jax", f"{ms * 1e-3:g}", f"{flops:g}", f"{tf:g}", 0, 0])
        del factor
    header = "op,dtype,n,nrhs,ndev,tile,path,seconds,flops,tflops,bytes,gbps"
    try:
        empty = open(args.csv).read(1) == ""
    except FileNotFoundError:
        empty = True
    with open(args.csv, "a", newline="") as f:
        if empty:
            f.write(header + "\n")
        csv.writer(f).writerows(rows)


if __name__ == "__main__":
    main()
