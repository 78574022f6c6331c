// mgla's own device kernels: layout transposes for host transfers, triangle
// fills, a real axpy, checks, products with a lower triangle, and the
// stationary kernel matrices and their gradient. Compiled to PTX by `make ptx` (nvcc -ptx) and
// embedded in package ptx; package sharding loads the PTX into every GPU's
// primary context and launches the kernels through the driver API.
//
// Every kernel parameter is 64 bits wide (gorgonia.org/cu passes parameters as
// 64-bit words). Matrices are column-major: element (i, j) of a matrix with
// leading dimension ld is at [i + j*ld].

#define TILE 32
#define ROWS 8

// transpose: out(i, j) = in(j, i) for i < rows, j < cols, through a shared
// 32×32 tile so that both the reads and the writes are coalesced. The element
// type only matters for its size.
template <typename T>
__device__ void transpose(T *out, long long ldo, const T *in, long long ldi,
                          long long rows, long long cols) {
  __shared__ T tile[TILE][TILE + 1];
  long long i0 = (long long)blockIdx.x * TILE, j0 = (long long)blockIdx.y * TILE;
  // read in(j, i): contiguous in j
  for (int k = threadIdx.y; k < TILE; k += ROWS) {
    long long j = j0 + threadIdx.x, i = i0 + k;
    if (i < rows && j < cols) tile[k][threadIdx.x] = in[j + i * ldi];
  }
  __syncthreads();
  // write out(i, j): contiguous in i
  for (int k = threadIdx.y; k < TILE; k += ROWS) {
    long long i = i0 + threadIdx.x, j = j0 + k;
    if (i < rows && j < cols) out[i + j * ldo] = tile[threadIdx.x][k];
  }
}

extern "C" __global__ void mgla_transpose4(float *out, long long ldo, const float *in,
                                           long long ldi, long long rows, long long cols) {
  transpose(out, ldo, in, ldi, rows, cols);
}
extern "C" __global__ void mgla_transpose8(double *out, long long ldo, const double *in,
                                           long long ldi, long long rows, long long cols) {
  transpose(out, ldo, in, ldi, rows, cols);
}
extern "C" __global__ void mgla_transpose16(double2 *out, long long ldo, const double2 *in,
                                            long long ldi, long long rows, long long cols) {
  transpose(out, ldo, in, ldi, rows, cols);
}

// zeroUpper zeroes the elements of a rows×cols block (leading dimension ld)
// that lie above the global diagonal: local (i, j) is global
// (i + shift + j', j') with shift = row offset − column offset of the block,
// so it is zeroed when i + shift < j.
template <typename T>
__device__ void zeroUpper(T *a, long long ld, long long rows, long long cols, long long shift) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long j = (long long)blockIdx.y * blockDim.y + threadIdx.y;
  if (i < rows && j < cols && i + shift < j) {
    T z;
    memset(&z, 0, sizeof z);
    a[i + j * ld] = z;
  }
}

extern "C" __global__ void mgla_zero_upper4(float *a, long long ld, long long rows,
                                            long long cols, long long shift) {
  zeroUpper(a, ld, rows, cols, shift);
}
extern "C" __global__ void mgla_zero_upper8(double *a, long long ld, long long rows,
                                            long long cols, long long shift) {
  zeroUpper(a, ld, rows, cols, shift);
}
extern "C" __global__ void mgla_zero_upper16(double2 *a, long long ld, long long rows,
                                             long long cols, long long shift) {
  zeroUpper(a, ld, rows, cols, shift);
}

// mirrored is the value A(i, j) takes from A(j, i) in a Hermitian matrix:
// the conjugate off the diagonal, the real part on it.
__device__ float mirrored(float x, bool diag) { return x; }
__device__ double mirrored(double x, bool diag) { return x; }
__device__ float2 mirrored(float2 x, bool diag) { return make_float2(x.x, diag ? 0.0f : -x.y); }
__device__ double2 mirrored(double2 x, bool diag) { return make_double2(x.x, diag ? 0.0 : -x.y); }

// Column c of the global matrix of a 1-D column block-cyclic layout (tile
// width tile over ndev devices) is local column localCol(c) of device
// owner(c).
__device__ long long ownerOf(long long c, long long tile, long long ndev) {
  return (c / tile) % ndev;
}
__device__ long long localColOf(long long c, long long tile, long long ndev) {
  return (c / tile / ndev) * tile + c % tile;
}

// mirrorLower fills the strict upper triangle of device dev's shard of an
// n×n Hermitian matrix in the column block-cyclic layout from the lower
// triangle: A(i, j) = conj(A(j, i)) for i < j, and makes the diagonal real.
// shards holds every device's
// shard base address (peer access enabled); each shard has leading dimension
// n. A block handles a 32×32 piece of the local shard: it reads the mirrored
// piece (rows = global columns of the piece, contiguous) into shared memory
// and writes it transposed.
template <typename T>
__device__ void mirrorLower(const unsigned long long *shards, long long dev, long long ndev,
                            long long n, long long tile, long long lcols) {
  __shared__ T buf[TILE][TILE + 1];
  long long i0 = (long long)blockIdx.x * TILE;  // global rows of the piece
  long long lc0 = (long long)blockIdx.y * TILE; // local columns of the piece
  if (lc0 >= lcols) return;
  // Global columns grow with local columns (this device holds tiles dev,
  // dev+ndev, …): a piece whose first row lies below its last column's
  // diagonal holds no upper or diagonal element.
  long long lcLast = min(lc0 + TILE, lcols) - 1;
  long long jLast = ((lcLast / tile) * ndev + dev) * tile + lcLast % tile;
  if (i0 > jLast) return;
  T *mine = (T *)shards[dev];
  // Read phase: thread x ↔ local column offset (source row), y ↔ row offset
  // (source column).
  for (int k = threadIdx.y; k < TILE; k += ROWS) {
    long long i = i0 + k, lc = lc0 + threadIdx.x;
    if (i < n && lc < lcols) {
      long long j = ((lc / tile) * ndev + dev) * tile + lc % tile;
      if (i <= j) {
        const T *src = (const T *)shards[ownerOf(i, tile, ndev)];
        buf[k][threadIdx.x] = src[j + localColOf(i, tile, ndev) * n];
      }
    }
  }
  __syncthreads();
  for (int k = threadIdx.y; k < TILE; k += ROWS) {
    long long i = i0 + threadIdx.x, lc = lc0 + k;
    if (i < n && lc < lcols) {
      long long j = ((lc / tile) * ndev + dev) * tile + lc % tile;
      if (i <= j) mine[i + lc * n] = mirrored(buf[threadIdx.x][k], i == j);
    }
  }
}

#define MIRROR_LOWER(SUFFIX, T)                                                                 \
  extern "C" __global__ void mgla_mirror_lower_##SUFFIX(const unsigned long long *shards,        \
                                                        long long dev, long long ndev, long long n, \
                                                        long long tile, long long lcols) {         \
    mirrorLower<T>(shards, dev, ndev, n, tile, lcols);                                             \
  }
MIRROR_LOWER(s, float)
MIRROR_LOWER(d, double)
MIRROR_LOWER(c, float2)
MIRROR_LOWER(z, double2)

// axpy: y += alpha·x over n reals (complex data is passed as 2n reals).
extern "C" __global__ void mgla_axpy_s(long long n, double alpha, const float *x, float *y) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    y[i] += (float)alpha * x[i];
}
extern "C" __global__ void mgla_axpy_d(long long n, double alpha, const double *x, double *y) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    y[i] += alpha * x[i];
}

// Go's min and max of floats through NCCL's unsigned min and max (whose
// float min and max drop NaNs): minmax_keys maps each float to an unsigned
// key of its width in the same order, -0 below +0 (the sign bit's
// complement for positive numbers, every bit's for negative ones), and a
// NaN to the smallest key for min (0) or the largest for max (all ones), so
// that a NaN wins either reduction; minmax_values maps keys back in place
// (those two keys give NaNs).
template <typename F, typename U>
__device__ void minmax_keys(U *out, const F *in, long long n, long long forMax) {
  const U sign = (U)1 << (8 * sizeof(U) - 1);
  const U inf = sizeof(U) == 4 ? (U)0x7f800000u : (U)0x7ff0000000000000ull;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    U b = *(const U *)&in[i];
    U k = (b & sign) ? ~b : (b | sign);
    if ((b & ~sign) > inf) k = forMax ? ~(U)0 : (U)0;
    out[i] = k;
  }
}
template <typename U>
__device__ void minmax_values(U *a, long long n) {
  const U sign = (U)1 << (8 * sizeof(U) - 1);
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    U k = a[i];
    a[i] = (k & sign) ? (k ^ sign) : ~k;
  }
}
extern "C" __global__ void mgla_minmax_keys_s(unsigned int *out, const float *in, long long n, long long forMax) {
  minmax_keys(out, in, n, forMax);
}
extern "C" __global__ void mgla_minmax_keys_d(unsigned long long *out, const double *in, long long n,
                                              long long forMax) {
  minmax_keys(out, in, n, forMax);
}
extern "C" __global__ void mgla_minmax_values_s(unsigned int *a, long long n) { minmax_values(a, n); }
extern "C" __global__ void mgla_minmax_values_d(unsigned long long *a, long long n) { minmax_values(a, n); }

// nonFinite sets *flag to 1 if a rows×cols block (leading dimension ld, in
// reals) holds NaN or ±Inf. Complex data is passed as reals with pairs = 2
// (element row = real row / pairs). With lower != 0 only the elements on or
// below the global diagonal count (element row + shift ≥ column).
template <typename T>
__device__ void nonFinite(const T *a, long long ld, long long rows, long long cols, long long shift,
                          long long lower, long long pairs, int *flag) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long j = (long long)blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= rows || j >= cols) return;
  if (lower && i / pairs + shift < j) return;
  if (!isfinite(a[i + j * ld])) atomicExch(flag, 1);
}

extern "C" __global__ void mgla_nonfinite_s(const float *a, long long ld, long long rows,
                                            long long cols, long long shift, long long lower,
                                            long long pairs, int *flag) {
  nonFinite(a, ld, rows, cols, shift, lower, pairs, flag);
}
extern "C" __global__ void mgla_nonfinite_d(const double *a, long long ld, long long rows,
                                            long long cols, long long shift, long long lower,
                                            long long pairs, int *flag) {
  nonFinite(a, ld, rows, cols, shift, lower, pairs, flag);
}

// diagCheck inspects count elements a[k*stride], k < count (stride in reals;
// complex elements are pairs = 2 consecutive reals) and raises bit 1 of
// *flag for NaN or ±Inf and bit 2 for an element that is exactly zero: the
// checks of a Cholesky factor's diagonal before a triangular solve.
template <typename T>
__device__ void diagCheck(const T *a, long long count, long long stride, long long pairs,
                          int *flag) {
  for (long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x; k < count;
       k += (long long)gridDim.x * blockDim.x) {
    bool zero = true;
    for (long long p = 0; p < pairs; p++) {
      T v = a[k * stride + p];
      if (!isfinite(v)) atomicOr(flag, 1);
      if (v != 0) zero = false;
    }
    if (zero) atomicOr(flag, 2);
  }
}

extern "C" __global__ void mgla_diag_check_s(const float *a, long long count, long long stride,
                                             long long pairs, int *flag) {
  diagCheck(a, count, stride, pairs, flag);
}
extern "C" __global__ void mgla_diag_check_d(const double *a, long long count, long long stride,
                                             long long pairs, int *flag) {
  diagCheck(a, count, stride, pairs, flag);
}

// eigenvectorTerms replaces the n×n M (leading dimension ld) by sym(F∘M),
// the eigenvector share's middle factor in Syevd's gradient, as
// kernels.SymmetricEigenvectorTerms does on the host, bit for bit: for a
// pair i < j (thread (i, j0 + y)) the mean of m_ij/(w_j − w_i) and
// m_ji/(w_i − w_j) in double, halves first, in both places, where
// |w_j − w_i| > gap; at a smaller gap 0 if m_ij and m_ji are both 0, else
// the pair is undefined and raises *bad to at least n·n − (j·n + i) (so the
// first undefined pair, in column order, leaves the largest value) and is
// left as it was. The diagonal becomes 0.
template <typename T>
__device__ void eigenvectorTerms(T *m, long long ld, long long n, long long j0, const double *w,
                                 double gap, unsigned long long *bad) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long j = j0 + (long long)blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= n || j >= n || i > j) return;
  if (i == j) {
    m[i + j * ld] = 0;
    return;
  }
  double ij = m[i + j * ld], ji = m[j + i * ld];
  double a = 0, b = 0;
  if (fabs(w[j] - w[i]) > gap) {
    a = ij / (w[j] - w[i]);
    b = ji / (w[i] - w[j]);
  } else if (ij != 0 || ji != 0) {
    atomicMax(bad, (unsigned long long)(n * n - (j * n + i)));
    return;
  }
  T t = (T)__dadd_rn(__dmul_rn(a, 0.5), __dmul_rn(b, 0.5)); // no contraction: the host's a/2 + b/2
  m[i + j * ld] = t;
  m[j + i * ld] = t;
}

extern "C" __global__ void mgla_eigenvector_terms_s(float *m, long long ld, long long n, long long j0,
                                                    const double *w, double gap,
                                                    unsigned long long *bad) {
  eigenvectorTerms(m, ld, n, j0, w, gap, bad);
}
extern "C" __global__ void mgla_eigenvector_terms_d(double *m, long long ld, long long n, long long j0,
                                                    const double *w, double gap,
                                                    unsigned long long *bad) {
  eigenvectorTerms(m, ld, n, j0, w, gap, bad);
}

// rowBand moves a band of whole rows between a row-major staging buffer
// (h rows of cols elements) and the column-major shards of a layout that
// keeps whole columns on one device: table[d] is the address of device d's
// shard (leading dimension ld) for d < ndev, and table[ndev + j] says where
// column j lives: its device << 40 | its local column. The band holds global
// rows r0 … r0+h-1. up scatters the band into the shards (writing other
// devices' shards through peer access), !up gathers it. A 1-D grid of
// 32×32 tiles, through shared memory so that the band and the shards are
// both read and written coalesced.
template <typename T>
__device__ void rowBand(T *band, long long h, long long cols, long long r0,
                        const unsigned long long *table, long long ndev, long long ld,
                        bool up) {
  __shared__ T tile[TILE][TILE + 1];
  long long nbi = (h + TILE - 1) / TILE;
  long long i0 = (long long)(blockIdx.x % nbi) * TILE, j0 = (long long)(blockIdx.x / nbi) * TILE;
  const unsigned long long mask = (1ULL << 40) - 1;
  if (up) {
    for (int k = threadIdx.y; k < TILE; k += ROWS) {
      long long i = i0 + k, j = j0 + threadIdx.x;
      if (i < h && j < cols) tile[k][threadIdx.x] = band[i * cols + j];
    }
    __syncthreads();
    for (int k = threadIdx.y; k < TILE; k += ROWS) {
      long long i = i0 + threadIdx.x, j = j0 + k;
      if (i < h && j < cols) {
        unsigned long long e = table[ndev + j];
        T *s = (T *)table[e >> 40];
        s[r0 + i + (long long)(e & mask) * ld] = tile[threadIdx.x][k];
      }
    }
    return;
  }
  for (int k = threadIdx.y; k < TILE; k += ROWS) {
    long long i = i0 + threadIdx.x, j = j0 + k;
    if (i < h && j < cols) {
      unsigned long long e = table[ndev + j];
      const T *s = (const T *)table[e >> 40];
      tile[threadIdx.x][k] = s[r0 + i + (long long)(e & mask) * ld];
    }
  }
  __syncthreads();
  for (int k = threadIdx.y; k < TILE; k += ROWS) {
    long long i = i0 + k, j = j0 + threadIdx.x;
    if (i < h && j < cols) band[i * cols + j] = tile[k][threadIdx.x];
  }
}

#define ROW_BAND(SIZE, T)                                                                     \
  extern "C" __global__ void mgla_scatter_rows##SIZE(T *band, long long h, long long cols,   \
                                                     long long r0,                           \
                                                     const unsigned long long *table,        \
                                                     long long ndev, long long ld) {         \
    rowBand(band, h, cols, r0, table, ndev, ld, true);                                       \
  }                                                                                          \
  extern "C" __global__ void mgla_gather_rows##SIZE(T *band, long long h, long long cols,    \
                                                    long long r0,                            \
                                                    const unsigned long long *table,         \
                                                    long long ndev, long long ld) {          \
    rowBand(band, h, cols, r0, table, ndev, ld, false);                                      \
  }
ROW_BAND(4, float)
ROW_BAND(8, double)
ROW_BAND(16, double2)

// ---- products with a lower triangle (checking a distributed factor) --------
//
// The kernels below multiply by the lower triangle of an n×n matrix held in
// the 1-D column block-cyclic layout (tile width tile over ndev devices;
// device dev holds lcols local columns, leading dimension n). Each device
// computes its own columns' share of the product; the caller sums the
// shares. Besides y they accumulate yabs = |tril|·xabs, the same product of
// magnitudes (xabs = |x| when it is null), which bounds the product's
// rounding error. The diagonal is
// taken as real (the Hermitian convention of the solvers); strict leaves it
// out.

template <typename T> struct RealOf { typedef T type; };
template <> struct RealOf<float2> { typedef float type; };
template <> struct RealOf<double2> { typedef double type; };

__device__ float magnitude(float a) { return fabsf(a); }
__device__ double magnitude(double a) { return fabs(a); }
__device__ float magnitude(float2 a) { return hypotf(a.x, a.y); }
__device__ double magnitude(double2 a) { return hypot(a.x, a.y); }

__device__ float realPart(float a) { return a; }
__device__ double realPart(double a) { return a; }
__device__ float2 realPart(float2 a) { return make_float2(a.x, 0.0f); }
__device__ double2 realPart(double2 a) { return make_double2(a.x, 0.0); }

// acc + a·x, and acc + conj(a)·x
__device__ float mulAdd(float acc, float a, float x, bool conj) { return acc + a * x; }
__device__ double mulAdd(double acc, double a, double x, bool conj) { return acc + a * x; }
__device__ float2 mulAdd(float2 acc, float2 a, float2 x, bool conj) {
  float ay = conj ? -a.y : a.y;
  return make_float2(acc.x + a.x * x.x - ay * x.y, acc.y + a.x * x.y + ay * x.x);
}
__device__ double2 mulAdd(double2 acc, double2 a, double2 x, bool conj) {
  double ay = conj ? -a.y : a.y;
  return make_double2(acc.x + a.x * x.x - ay * x.y, acc.y + a.x * x.y + ay * x.x);
}
__device__ float add(float a, float b) { return a + b; }
__device__ double add(double a, double b) { return a + b; }
__device__ float2 add(float2 a, float2 b) { return make_float2(a.x + b.x, a.y + b.y); }
__device__ double2 add(double2 a, double2 b) { return make_double2(a.x + b.x, a.y + b.y); }

__device__ void atomicAddTo(float *p, float v) { atomicAdd(p, v); }
__device__ void atomicAddTo(double *p, double v) { atomicAdd(p, v); }
__device__ void atomicAddTo(float2 *p, float2 v) {
  atomicAdd(&p->x, v.x);
  atomicAdd(&p->y, v.y);
}
__device__ void atomicAddTo(double2 *p, double2 v) {
  atomicAdd(&p->x, v.x);
  atomicAdd(&p->y, v.y);
}

// lowerMv: y(i) += Σ_j tril(A)(i, j)·x(j) over this device's columns j, one
// thread per row (the reads of a column are coalesced) and one block row
// per MV_COLS local columns, whose sums are added atomically (y and yabs
// start at zero). The local columns of one tile are consecutive global
// columns: each thread walks them as runs that end at its diagonal, with
// the loads of a run unrolled so that several are in flight.
#define MV_COLS 256
template <typename T>
__device__ void lowerMv(const T *a, long long n, long long tile, long long ndev, long long dev,
                        long long lcols, const T *x, const typename RealOf<T>::type *xabs, T *y,
                        typename RealOf<T>::type *yabs, long long strict) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long lc = (long long)blockIdx.y * MV_COLS;
  if (i >= n || lc >= lcols) return;
  T acc;
  memset(&acc, 0, sizeof acc);
  typename RealOf<T>::type accAbs = 0;
  long long lcEnd = min(lc + MV_COLS, lcols);
  long long last = strict ? i - 1 : i; // the last global column of row i's triangle
  bool any = false; // whether row i has a column here (its sums may be 0 even so)
  while (lc < lcEnd) {
    long long k = lc % tile; // column lc is column k of its tile, global column j0
    long long j0 = ((lc / tile) * ndev + dev) * tile + k;
    if (j0 > last) break; // later runs lie further right
    long long run = min(tile - k, lcEnd - lc);
    int m = (int)min(run, last - j0 + 1);
    any = true;
    const T *ai = a + i + lc * n;
#pragma unroll 8
    for (int t = 0; t < m; t++) {
      T v = ai[t * n];
      long long j = j0 + t;
      if (j == i) v = realPart(v);
      acc = mulAdd(acc, v, x[j], false);
      accAbs += magnitude(v) * (xabs ? xabs[j] : magnitude(x[j]));
    }
    lc += run;
  }
  if (any) {
    atomicAddTo(&y[i], acc);
    atomicAdd(&yabs[i], accAbs);
  }
}

__device__ float shuffleDown(float v, int d) { return __shfl_down_sync(0xffffffff, v, d); }
__device__ double shuffleDown(double v, int d) { return __shfl_down_sync(0xffffffff, v, d); }
__device__ float2 shuffleDown(float2 v, int d) {
  return make_float2(__shfl_down_sync(0xffffffff, v.x, d), __shfl_down_sync(0xffffffff, v.y, d));
}
__device__ double2 shuffleDown(double2 v, int d) {
  return make_double2(__shfl_down_sync(0xffffffff, v.x, d), __shfl_down_sync(0xffffffff, v.y, d));
}

// lowerMhv: y(j) += Σ_i conj(tril(A)(i, j))·x(i) for each of this device's
// columns j, one warp per column (MHV_WARPS columns per block of 32·MHV_WARPS
// threads), its sums reduced by shuffles; y's other entries are left as
// they are.
#define MHV_WARPS 8
template <typename T>
__device__ void lowerMhv(const T *a, long long n, long long tile, long long ndev, long long dev,
                         long long lcols, const T *x, const typename RealOf<T>::type *xabs, T *y,
                         typename RealOf<T>::type *yabs, long long strict) {
  long long lc = (long long)blockIdx.x * MHV_WARPS + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (lc >= lcols) return; // a whole warp
  long long j = ((lc / tile) * ndev + dev) * tile + lc % tile;
  const T *aj = a + lc * n;
  T acc;
  memset(&acc, 0, sizeof acc);
  typename RealOf<T>::type accAbs = 0;
#pragma unroll 4
  for (long long i = j + (strict ? 1 : 0) + lane; i < n; i += 32) {
    T v = aj[i];
    if (i == j) v = realPart(v);
    acc = mulAdd(acc, v, x[i], true);
    accAbs += magnitude(v) * (xabs ? xabs[i] : magnitude(x[i]));
  }
  for (int d = 16; d > 0; d /= 2) {
    acc = add(acc, shuffleDown(acc, d));
    accAbs += shuffleDown(accAbs, d);
  }
  if (lane == 0) { // one warp per column: no other thread adds to y[j]
    y[j] = add(y[j], acc);
    yabs[j] += accAbs;
  }
}

#define LOWER_PRODUCTS(letter, T, R)                                                          \
  extern "C" __global__ void mgla_lower_mv_##letter(                                          \
      const T *a, long long n, long long tile, long long ndev, long long dev, long long lcols, \
      const T *x, const R *xabs, T *y, R *yabs, long long strict) {                           \
    lowerMv(a, n, tile, ndev, dev, lcols, x, xabs, y, yabs, strict);                          \
  }                                                                                           \
  extern "C" __global__ void mgla_lower_mhv_##letter(                                         \
      const T *a, long long n, long long tile, long long ndev, long long dev, long long lcols, \
      const T *x, const R *xabs, T *y, R *yabs, long long strict) {                           \
    lowerMhv(a, n, tile, ndev, dev, lcols, x, xabs, y, yabs, strict);                         \
  }
LOWER_PRODUCTS(s, float, float)
LOWER_PRODUCTS(d, double, double)
LOWER_PRODUCTS(c, float2, float)
LOWER_PRODUCTS(z, double2, double)

// The stationary kernel matrix of n points of dimension d, K_ij =
// σ²·v(‖x_i − x_j‖²/ℓ²) + σₙ²·[i = j], v the profile of its family
// (kernelProfile), and its gradient (sharding's SetKernelMatrix and
// KernelMatrixGrad). The points are stored by dimension, xt[k*n + i] =
// x_i[k] (coalesced reads over i), in double; a device's shard is n×lcols, column-major with leading dimension
// n, and cols[c] (64-bit) is the global index of its local column c. The
// arithmetic is the host's (sharding/kernelmatrix.go) operation for operation,
// without contraction into fused multiply-adds, so that only exp differs
// in the last bits. ells[k] is dimension k's length scale (all ℓ for one
// length scale). scaledDistance2 is ‖x_i − x_j‖²/ℓ², summed over k in order as
// ((x_i[k] − x_j[k])/ℓ_k)², which makes K exactly symmetric and keeps it
// right where ‖x_i − x_j‖² or ℓ² alone would overflow or underflow.
__device__ double scaledDistance2(const double *xt, long long n, long long d, long long i, long long j,
                       const double *ells) {
  double r2 = 0;
  for (long long k = 0; k < d; k++) {
    double diff = __ddiv_rn(__dsub_rn(xt[k * n + i], xt[k * n + j]), ells[k]);
    r2 = __dadd_rn(r2, __dmul_rn(diff, diff));
  }
  return r2;
}

// kernelProfile is sharding's KernelFamily.profile operation for operation: for
// s = ‖x_i − x_j‖²/ℓ² ≥ 0, the family's v(s) and g(s) = −2·v′(s). family is
// sharding's KernelFamily: 1 Matérn 3/2, a = √(3s), v = (1 + a)·e^−a, g =
// 3·e^−a; 2 Matérn 5/2, a = √(5s), v = (1 + a + a²/3)·e^−a, g = (5/3)·(1 +
// a)·e^−a (both 0 once e^−a is); otherwise the squared exponential, v = g =
// exp(−s/2).
__device__ void kernelProfile(long long family, double s, double *v, double *g) {
  if (family == 1) {
    double a = __dsqrt_rn(__dmul_rn(3.0, s));
    double e = exp(-a);
    if (e == 0) {
      *v = 0;
      *g = 0;
      return;
    }
    *v = __dmul_rn(__dadd_rn(1.0, a), e);
    *g = __dmul_rn(3.0, e);
    return;
  }
  if (family == 2) {
    double a = __dsqrt_rn(__dmul_rn(5.0, s));
    double e = exp(-a);
    if (e == 0) {
      *v = 0;
      *g = 0;
      return;
    }
    *v = __dmul_rn(__dadd_rn(__dadd_rn(1.0, a), __ddiv_rn(__dmul_rn(a, a), 3.0)), e);
    *g = __dmul_rn(__dmul_rn(5.0 / 3.0, __dadd_rn(1.0, a)), e);
    return;
  }
  double e = exp(__dmul_rn(s, -0.5));
  *v = e;
  *g = e;
}

// kernelSlope is (x_i − x_j)/ℓ², the factor of x̄'s terms, as the host forms it.
__device__ double kernelSlope(double xi, double xj, double ell) {
  return __ddiv_rn(__ddiv_rn(__dsub_rn(xi, xj), ell), ell);
}

// kernelMatrix writes K's local columns c0 … c1−1 (thread (i, c0 + y)), computed in
// double and rounded to T.
template <typename T>
__device__ void kernelMatrix(T *a, long long n, long long c0, long long c1, const long long *cols,
                      const double *xt, long long d, const double *ells, double sigma2, double noise,
                      long long family) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long c = c0 + (long long)blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= n || c >= c1) return;
  long long j = cols[c];
  double pv, pg;
  kernelProfile(family, scaledDistance2(xt, n, d, i, j, ells), &pv, &pg);
  double v = __dmul_rn(sigma2, pv);
  if (i == j) v = __dadd_rn(v, noise);
  a[i + c * n] = (T)v;
}

extern "C" __global__ void mgla_kernel_matrix_s(float *a, long long n, long long c0, long long c1,
                                        const long long *cols, const double *xt, long long d,
                                        const double *ells, double sigma2, double noise,
                                        long long family) {
  kernelMatrix(a, n, c0, c1, cols, xt, d, ells, sigma2, noise, family);
}
extern "C" __global__ void mgla_kernel_matrix_d(double *a, long long n, long long c0, long long c1,
                                        const long long *cols, const double *xt, long long d,
                                        const double *ells, double sigma2, double noise,
                                        long long family) {
  kernelMatrix(a, n, c0, c1, cols, xt, d, ells, sigma2, noise, family);
}

// SE_THREADS is the block size of kernelMatrixGradCols, a multiple of 32.
#define SE_THREADS 256

// blockSums returns to thread 0, in v[q] for q < K, the sums of v[q] over
// the block's SE_THREADS threads, each in a fixed order (each warp by
// shuffles, then the warps' sums in order): deterministic, and NaN
// propagates. Every thread must call it; K sums share one pair of barriers.
template <int K>
__device__ void blockSums(double *v) {
  __shared__ double warps[K][SE_THREADS / 32];
#pragma unroll
  for (int q = 0; q < K; q++)
    for (int o = 16; o > 0; o /= 2) v[q] += __shfl_down_sync(0xffffffff, v[q], o);
  __syncthreads(); // the previous call's reads of warps are done
  if (threadIdx.x % 32 == 0)
#pragma unroll
    for (int q = 0; q < K; q++) warps[q][threadIdx.x / 32] = v[q];
  __syncthreads();
  if (threadIdx.x == 0)
#pragma unroll
    for (int q = 0; q < K; q++) {
      double s = 0;
      for (int w = 0; w < SE_THREADS / 32; w++) s += warps[q][w];
      v[q] = s;
    }
}

// SE_DIMS is how many dimensions of p kernelMatrixGradCols sums in one pass over
// the column's weights.
#define SE_DIMS 4

// kernelMatrixGradCols: one block of SE_THREADS threads per local column c = c0 +
// blockIdx.x of the kernel gradient K̄ (shard a, finite: the host checks),
// j = cols[c]. With k = K̄(i, c) in double and v, g the family's profile
// (kernelProfile) at r² = ‖x_i − x_j‖²/ℓ²: w[(c − c0)·n + i] = k·σ²·g (0 where
// k is 0, whose terms the host skips too); sums[3c …] = Σ_i k·v,
// Σ_i k·g·r², K̄(j, c); and p[c·d + m] = Σ_i w_i·(x_i[m] − x_j[m])/ℓ², the
// column's share of x̄_j, over the nonzero w_i (a zero one, k = 0 or g = 0,
// adds nothing, even where the slope is Inf), SE_DIMS dimensions per pass
// (ℓ² there is ℓ_m²). With ls (per-dimension length scales; 0 for one),
// also ls[c·d + m] = Σ_i w_i·((x_i[m] − x_j[m])/ℓ_m)², the column's share
// of ℓ_m·ℓ̄_m.
template <typename T>
__device__ void kernelMatrixGradCols(const T *a, long long n, long long c0, const long long *cols,
                              const double *xt, long long d, const double *ells, double sigma2,
                              double *w, double *sums, double *p, double *ls, long long family) {
  long long c = c0 + blockIdx.x;
  long long j = cols[c];
  const T *col = a + c * n;
  double *wc = w + (long long)blockIdx.x * n;
  double s[2] = {0, 0};
  for (long long i = threadIdx.x; i < n; i += SE_THREADS) {
    double k = (double)col[i];
    double wi = 0;
    if (k != 0) {
      double r2 = scaledDistance2(xt, n, d, i, j, ells);
      double v, g;
      kernelProfile(family, r2, &v, &g);
      s[0] = __dadd_rn(s[0], __dmul_rn(k, v));
      double kg = __dmul_rn(k, g);
      if (kg != 0) s[1] = __dadd_rn(s[1], __dmul_rn(kg, r2)); // 0 where g is, even at r² = Inf
      if (g != 0) wi = __dmul_rn(__dmul_rn(k, sigma2), g); // 0 at a zero slope, even where k·σ² is Inf
    }
    wc[i] = wi; // read back below by this thread only
  }
  blockSums<2>(s);
  if (threadIdx.x == 0) {
    sums[3 * c] = s[0];
    sums[3 * c + 1] = s[1];
    sums[3 * c + 2] = (double)col[j];
  }
  for (long long m0 = 0; m0 < d; m0 += SE_DIMS) {
    int dd = (int)min((long long)SE_DIMS, d - m0);
    double xj[SE_DIMS], el[SE_DIMS], v[SE_DIMS], u[SE_DIMS];
#pragma unroll
    for (int q = 0; q < SE_DIMS; q++) {
      xj[q] = q < dd ? xt[(m0 + q) * n + j] : 0;
      el[q] = q < dd ? ells[m0 + q] : 1;
      v[q] = 0;
      u[q] = 0;
    }
    for (long long i = threadIdx.x; i < n; i += SE_THREADS) {
      double wi = wc[i];
      if (wi == 0) continue;
#pragma unroll
      for (int q = 0; q < SE_DIMS; q++)
        if (q < dd) {
          double xi = xt[(m0 + q) * n + i];
          v[q] = __dadd_rn(v[q], __dmul_rn(wi, kernelSlope(xi, xj[q], el[q])));
          if (ls) {
            double r = __ddiv_rn(__dsub_rn(xi, xj[q]), el[q]);
            u[q] = __dadd_rn(u[q], __dmul_rn(wi, __dmul_rn(r, r)));
          }
        }
    }
    blockSums<SE_DIMS>(v);
    if (threadIdx.x == 0)
      for (int q = 0; q < dd; q++) p[c * d + m0 + q] = v[q];
    if (ls) { // the same for every thread of the block
      blockSums<SE_DIMS>(u);
      if (threadIdx.x == 0)
        for (int q = 0; q < dd; q++) ls[c * d + m0 + q] = u[q];
    }
  }
}

extern "C" __global__ void mgla_kernel_matrix_grad_cols_s(const float *a, long long n, long long c0,
                                                  const long long *cols, const double *xt,
                                                  long long d, const double *ells, double sigma2,
                                                  double *w, double *sums, double *p, double *ls,
                                                  long long family) {
  kernelMatrixGradCols(a, n, c0, cols, xt, d, ells, sigma2, w, sums, p, ls, family);
}
extern "C" __global__ void mgla_kernel_matrix_grad_cols_d(const double *a, long long n, long long c0,
                                                  const long long *cols, const double *xt,
                                                  long long d, const double *ells, double sigma2,
                                                  double *w, double *sums, double *p, double *ls,
                                                  long long family) {
  kernelMatrixGradCols(a, n, c0, cols, xt, d, ells, sigma2, w, sums, p, ls, family);
}

// mgla_kernel_matrix_grad_rows adds the shares of the local columns c0 … c0+cw−1 of
// kernelMatrixGradCols's weights w (n×cw, column-major) in x̄_i to the partial sums
// of the slabs of slab local columns (slab s holds columns s·slab …
// s·slab+slab−1): part[(s·d + m)·n + i] += Σ_c w(i, c)·(x_i[m] −
// x_{cols[c]}[m])/ℓ_m² over the slab's nonzero weights, the columns in order,
// from 0 at the slab's first column. Block x = (s − s0)·xblocks + b is
// thread i = b·blockDim.x + threadIdx.x of slab s; y is the dimension m0 +
// blockIdx.y·blockDim.y + threadIdx.y. The slabs depend on neither the
// chunks nor the scheduling, so neither do the sums. It only reads doubles,
// so one kernel serves both dtypes.
extern "C" __global__ void mgla_kernel_matrix_grad_rows(const double *w, long long n, long long c0,
                                                long long cw, const long long *cols,
                                                const double *xt, long long d, long long m0,
                                                const double *ells, double *part, long long slab,
                                                long long s0, long long xblocks) {
  long long s = s0 + (long long)blockIdx.x / xblocks;
  long long i = ((long long)blockIdx.x % xblocks) * blockDim.x + threadIdx.x;
  long long m = m0 + (long long)blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= n || m >= d) return;
  long long first = s * slab, lo = max(c0, first), hi = min(c0 + cw, first + slab);
  const double *xm = xt + m * n;
  double *ps = part + (s * d + m) * n + i;
  double xi = xm[i], ell = ells[m], acc = lo == first ? 0 : *ps;
  for (long long c = lo; c < hi; c++) {
    double wv = w[(c - c0) * n + i];
    if (wv != 0) acc = __dadd_rn(acc, __dmul_rn(wv, kernelSlope(xi, xm[cols[c]], ell)));
  }
  *ps = acc;
}

// mgla_kernel_matrix_grad_sum adds the nslabs partial sums of mgla_kernel_matrix_grad_rows,
// slab by slab in order: r[e] = Σ_s part[s·nd + e] for e < nd (grid-stride).
extern "C" __global__ void mgla_kernel_matrix_grad_sum(const double *part, long long nd,
                                               long long nslabs, double *r) {
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < nd;
       e += (long long)gridDim.x * blockDim.x) {
    double acc = part[e];
    for (long long s = 1; s < nslabs; s++) acc = __dadd_rn(acc, part[s * nd + e]);
    r[e] = acc;
  }
}
