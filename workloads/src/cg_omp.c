/* OpenMP conjugate gradient (MiniFE-like), as cg.c, on the 2D 5-point Laplacian in CSR form
 * on a sqrt(n) x sqrt(n) grid; REPS CG iterations. One parallel region around the whole
 * solve (outlined into `kernel_cg_omp._omp_fn.0`): every loop is split over the threads by
 * a static schedule, and each dot product is summed by hand (each thread's partial sum in a
 * padded slot, a barrier, then every thread adds the T partial sums) so that its FLOPs are
 * counted in the region rather than in the OpenMP runtime.
 * FLOPs as cg.c, plus per dot product T x T adds (each thread sums T partials) and per
 * iteration 2 T divisions (each thread computes alpha and beta) instead of 2.
 * Build: gcc -O3 -fopenmp ...; threads from OMP_NUM_THREADS. */
#include <omp.h>

#include "common.h"

#define PAD 8 /* one 64-byte line per partial sum */

/* Every thread's partial sums, then their total (the same in every thread). */
static double sum_partials(double *part, double mine) {
  int t = omp_get_thread_num(), nt = omp_get_num_threads();
  part[t * PAD] = mine;
#pragma omp barrier
  double s = 0.0;
  for (int k = 0; k < nt; k++) s += part[k * PAD];
#pragma omp barrier
  return s;
}

NOINLINE double kernel_cg_omp(long n, long iters, const long *restrict row_ptr,
                              const int *restrict col, const double *restrict val,
                              double *restrict x, double *restrict r, double *restrict p,
                              double *restrict q, double *restrict part) {
  double result = 0.0;
#pragma omp parallel
  {
    double s = 0.0;
#pragma omp for schedule(static)
    for (long i = 0; i < n; i++) s += r[i] * r[i];
    double rr = sum_partials(part, s);
    for (long it = 0; it < iters; it++) {
#pragma omp for schedule(static)
      for (long i = 0; i < n; i++) {
        double a = 0.0;
        for (long k = row_ptr[i]; k < row_ptr[i + 1]; k++) a += val[k] * p[col[k]];
        q[i] = a;
      }
      s = 0.0;
#pragma omp for schedule(static) nowait
      for (long i = 0; i < n; i++) s += p[i] * q[i];
      double alpha = rr / sum_partials(part, s);
#pragma omp for schedule(static)
      for (long i = 0; i < n; i++) x[i] += alpha * p[i];
#pragma omp for schedule(static)
      for (long i = 0; i < n; i++) r[i] -= alpha * q[i];
      s = 0.0;
#pragma omp for schedule(static) nowait
      for (long i = 0; i < n; i++) s += r[i] * r[i];
      double rr_new = sum_partials(part, s);
      double beta = rr_new / rr;
      rr = rr_new;
#pragma omp for schedule(static)
      for (long i = 0; i < n; i++) p[i] = r[i] + beta * p[i];
    }
#pragma omp master
    result = rr;
  }
  return result;
}

int main(int argc, char **argv) {
  long n = arg_long(argc, argv, 1, 250000), reps = arg_long(argc, argv, 2, 10);
  long g = 1;
  while ((g + 1) * (g + 1) <= n) g++;
  n = g * g;
  long *row_ptr = xalloc((n + 1) * sizeof *row_ptr);
  int *col = xalloc(5 * n * sizeof *col);
  double *val = xalloc(5 * n * sizeof *val);
  double *x = xalloc(n * sizeof *x), *r = xalloc(n * sizeof *r), *p = xalloc(n * sizeof *p),
         *q = xalloc(n * sizeof *q);
  int nt = omp_get_max_threads();
  double *part = xalloc((size_t)nt * PAD * sizeof *part);
  long nnz = 0;
  for (long i = 0; i < g; i++)
    for (long j = 0; j < g; j++) {
      long row = i * g + j;
      row_ptr[row] = nnz;
      long nb[5][2] = {{i - 1, j}, {i, j - 1}, {i, j}, {i, j + 1}, {i + 1, j}};
      for (int k = 0; k < 5; k++)
        if (nb[k][0] >= 0 && nb[k][0] < g && nb[k][1] >= 0 && nb[k][1] < g) {
          col[nnz] = (int)(nb[k][0] * g + nb[k][1]);
          val[nnz] = k == 2 ? 4.0 : -1.0;
          nnz++;
        }
    }
  row_ptr[n] = nnz;
  for (long i = 0; i < n; i++) x[i] = 0.0, r[i] = 1.0 + i % 3, p[i] = r[i], q[i] = 0.0;
  double t = now_s();
  double rr = kernel_cg_omp(n, reps, row_ptr, col, val, x, r, p, q, part);
  t = now_s() - t;
  /* As cg.c; the dot products' partial sums: T x T adds each (2 per iteration and the
   * initial one); alpha and beta in every thread: 2 T divisions per iteration. */
  double T = nt;
  double flops = (2.0 * nnz + 10.0 * n) * reps + 2.0 * n + T * T * (2.0 * reps + 1.0) +
                 2.0 * T * reps;
  double bytes = (20.0 * nnz + 24.0 * n + 96.0 * n) * reps + 8.0 * n;
  printf("threads=%d ", nt);
  report("cg_omp", n, reps, flops, bytes, t, rr);
  return 0;
}
