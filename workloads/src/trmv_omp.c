/* OpenMP lower-triangular matrix-vector product, y = L x, with L packed row by row (row i
 * holds i + 1 elements), rows split over the threads by a static schedule: the work of a
 * row grows with its index, so with T threads thread t gets a share (2t + 1) / T^2 of the
 * FLOPs (1/4 and 3/4 with two threads): a load-imbalanced kernel.
 * 2 FLOPs per element; as written, 16 bytes per element (L and x) and 8 per row (y).
 * The parallel loop is outlined into `kernel_trmv_omp._omp_fn.0`.
 * Build: gcc -O3 -fopenmp ...; threads from OMP_NUM_THREADS. */
#include <omp.h>

#include "common.h"

NOINLINE void kernel_trmv_omp(long n, const double *restrict l, const double *restrict x,
                              double *restrict y) {
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; i++) {
    const double *row = l + i * (i + 1) / 2;
    double s = 0.0;
    for (long j = 0; j <= i; j++) s += row[j] * x[j];
    y[i] = s;
  }
}

int main(int argc, char **argv) {
  long n = arg_long(argc, argv, 1, 2000), reps = arg_long(argc, argv, 2, 10);
  long elems = n * (n + 1) / 2;
  double *l = xalloc(elems * sizeof *l), *x = xalloc(n * sizeof *x), *y = xalloc(n * sizeof *y);
  for (long k = 0; k < elems; k++) l[k] = 1.0 / (1.0 + k % 13);
  for (long i = 0; i < n; i++) x[i] = 1.0 + i % 5, y[i] = 0.0;
  double t = now_s();
  for (long r = 0; r < reps; r++) kernel_trmv_omp(n, l, x, y);
  t = now_s() - t;
  double check = 0;
  for (long i = 0; i < n; i++) check += y[i];
  printf("threads=%d ", omp_get_max_threads());
  report("trmv_omp", n, reps, 2.0 * elems * reps, (16.0 * elems + 8.0 * n) * reps, t, check);
  return 0;
}
