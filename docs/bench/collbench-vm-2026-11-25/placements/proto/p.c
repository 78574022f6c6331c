// Prototype timings for collperf2: bcast root copy, gather zeros, reduce_scatter blocking vs nonblocking.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

static int rank, size;
static double now(void) { return MPI_Wtime(); }
static void waitall(int n, MPI_Request *r) { int f = 0; while (!f) MPI_Testall(n, r, &f, MPI_STATUSES_IGNORE); }

// variants
static void bc_raw(double *s, double *r, int n) { MPI_Bcast(rank == 0 ? s : r, n, MPI_DOUBLE, 0, MPI_COMM_WORLD); }
static void bc_ibcast_raw(double *s, double *r, int n) { MPI_Request q; MPI_Ibcast(rank == 0 ? s : r, n, MPI_DOUBLE, 0, MPI_COMM_WORLD, &q); waitall(1, &q); }
static void bc_after(double *s, double *r, int n) { MPI_Request q; MPI_Ibcast(rank == 0 ? s : r, n, MPI_DOUBLE, 0, MPI_COMM_WORLD, &q); waitall(1, &q); if (rank == 0) memcpy(r, s, n * 8); }
static void bc_before_recv(double *s, double *r, int n) { MPI_Request q; if (rank == 0) memcpy(r, s, n * 8); MPI_Ibcast(r, n, MPI_DOUBLE, 0, MPI_COMM_WORLD, &q); waitall(1, &q); }
static int CH = 131072; // elements per chunk (1 MiB)
static MPI_Request qs[4096];
static void bc_pipe(double *s, double *r, int n) {
	int k = 0;
	for (int o = 0; o < n; o += CH, k++) {
		int m = n - o < CH ? n - o : CH;
		if (rank == 0) memcpy(r + o, s + o, (size_t)m * 8);
		MPI_Ibcast(r + o, m, MPI_DOUBLE, 0, MPI_COMM_WORLD, &qs[k]);
		int f; MPI_Testall(k + 1, qs, &f, MPI_STATUSES_IGNORE);
	}
	waitall(k, qs);
}
static void bc_pipe_block(double *s, double *r, int n) {
	for (int o = 0; o < n; o += CH) {
		int m = n - o < CH ? n - o : CH;
		if (rank == 0) memcpy(r + o, s + o, (size_t)m * 8);
		MPI_Bcast(r + o, m, MPI_DOUBLE, 0, MPI_COMM_WORLD);
	}
}
static void bc_during(double *s, double *r, int n) {
	MPI_Request q; MPI_Ibcast(rank == 0 ? s : r, n, MPI_DOUBLE, 0, MPI_COMM_WORLD, &q);
	if (rank == 0) for (int o = 0; o < n; o += CH) { int m = n - o < CH ? n - o : CH; memcpy(r + o, s + o, (size_t)m * 8); int f; MPI_Test(&q, &f, MPI_STATUS_IGNORE); }
	waitall(1, &q);
}
static void bc_block_after(double *s, double *r, int n) { MPI_Bcast(rank == 0 ? s : r, n, MPI_DOUBLE, 0, MPI_COMM_WORLD); if (rank == 0) memcpy(r, s, n * 8); }

// gather: n = block elements; recv holds size*n
static void ga_raw(double *s, double *r, int n) { MPI_Gather(s, n, MPI_DOUBLE, r, n, MPI_DOUBLE, 0, MPI_COMM_WORLD); }
static void ga_i(double *s, double *r, int n) { MPI_Request q; MPI_Igather(s, n, MPI_DOUBLE, r, n, MPI_DOUBLE, 0, MPI_COMM_WORLD, &q); waitall(1, &q); }
static void ga_clear(double *s, double *r, int n) { ga_i(s, r, n); if (rank != 0) memset(r, 0, (size_t)n * size * 8); }
static int allzero(const double *p, size_t n) { const unsigned long *u = (const unsigned long *)p; unsigned long acc = 0; for (size_t i = 0; i < n; i++) acc |= u[i]; return acc == 0; }
static void ga_scan(double *s, double *r, int n) { ga_i(s, r, n); if (rank != 0) { size_t tot = (size_t)n * size, c = 32768; for (size_t o = 0; o < tot; o += c) { size_t m = tot - o < c ? tot - o : c; if (!allzero(r + o, m)) memset(r + o, 0, m * 8); } } }
static void ga_during(double *s, double *r, int n) {
	MPI_Request q; MPI_Igather(s, n, MPI_DOUBLE, r, n, MPI_DOUBLE, 0, MPI_COMM_WORLD, &q);
	if (rank != 0) { size_t tot = (size_t)n * size; for (size_t o = 0; o < tot; o += CH) { size_t m = tot - o < CH ? tot - o : CH; memset(r + o, 0, m * 8); int f; MPI_Test(&q, &f, MPI_STATUS_IGNORE); } }
	waitall(1, &q);
}
static void ga_before(double *s, double *r, int n) { if (rank != 0) memset(r, 0, (size_t)n * size * 8); ga_i(s, r, n); }
static void ga_block_clear(double *s, double *r, int n) { ga_raw(s, r, n); if (rank != 0) memset(r, 0, (size_t)n * size * 8); }

// reduce_scatter_block: n = block elements
static void rs_raw(double *s, double *r, int n) { MPI_Reduce_scatter_block(s, r, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); }
static void rs_i(double *s, double *r, int n) { MPI_Request q; MPI_Ireduce_scatter_block(s, r, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q); waitall(1, &q); }
// blocking on a helper thread, caller waits on a condition variable
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER; static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int job, done; static double *js, *jr; static int jn;
static void *worker(void *a) { (void)a; for (;;) { pthread_mutex_lock(&mu); while (!job) pthread_cond_wait(&cv, &mu); job = 0; pthread_mutex_unlock(&mu);
	MPI_Reduce_scatter_block(js, jr, jn, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	pthread_mutex_lock(&mu); done = 1; pthread_cond_broadcast(&cv); pthread_mutex_unlock(&mu); } return 0; }
static void rs_thread(double *s, double *r, int n) { pthread_mutex_lock(&mu); js = s; jr = r; jn = n; job = 1; done = 0; pthread_cond_broadcast(&cv); while (!done) pthread_cond_wait(&cv, &mu); pthread_mutex_unlock(&mu); }

typedef void (*fn)(double *, double *, int);
struct v { const char *name; fn f; int kind; } vs[] = {
	{"bcast-raw", bc_raw, 0}, {"bcast-ibcast", bc_ibcast_raw, 0}, {"bcast-after", bc_after, 0}, {"bcast-before", bc_before_recv, 0},
	{"bcast-pipe", bc_pipe, 0}, {"bcast-pipe-blk", bc_pipe_block, 0}, {"bcast-blk-after", bc_block_after, 0}, {"bcast-during", bc_during, 0},
	{"gather-raw", ga_raw, 1}, {"gather-i", ga_i, 1}, {"gather-clear", ga_clear, 1}, {"gather-scan", ga_scan, 1}, {"gather-blk-clear", ga_block_clear, 1}, {"gather-during", ga_during, 1}, {"gather-before", ga_before, 1},
	{"rs-raw", rs_raw, 1}, {"rs-i", rs_i, 1}, {"rs-thread", rs_thread, 1},
};

int main(int argc, char **argv) {
	int prov; MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &prov);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
	const char *only = argc > 1 ? argv[1] : "";
	int reps = argc > 2 ? atoi(argv[2]) : 15;
	if (argc > 3) CH = atoi(argv[3]) / 8;
	pthread_t th; pthread_create(&th, 0, worker, 0);
	size_t maxb = 64u << 20;
	double *s = aligned_alloc(4096, maxb), *r = aligned_alloc(4096, maxb);
	for (size_t i = 0; i < maxb / 8; i++) s[i] = i % 7 + 1, r[i] = 0;
	size_t sizes[] = {1u << 20, 4u << 20, 16u << 20, 64u << 20};
	if (rank == 0) printf("ranks %d, thread level %d, chunk %d B\n", size, prov, CH * 8);
	for (int si = 0; si < 4; si++) {
		for (unsigned vi = 0; vi < sizeof vs / sizeof vs[0]; vi++) {
			if (*only && !strstr(vs[vi].name, only)) continue;
			int n = sizes[si] / 8; if (vs[vi].kind == 1) n /= size;
			double t[64]; 
			for (int k = 0; k < reps + 1; k++) { vs[vi].f(s, r, n); MPI_Barrier(MPI_COMM_WORLD); double t0 = now(); vs[vi].f(s, r, n); double d = now() - t0, m; MPI_Allreduce(&d, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD); if (k) t[k - 1] = m; }
			for (int a = 0; a < reps; a++) for (int b = a + 1; b < reps; b++) if (t[b] < t[a]) { double x = t[a]; t[a] = t[b]; t[b] = x; }
			if (rank == 0) printf("%-18s %3zu MiB %9.1f us\n", vs[vi].name, sizes[si] >> 20, t[reps / 2] * 1e6);
		}
	}
	MPI_Finalize();
	return 0;
}
