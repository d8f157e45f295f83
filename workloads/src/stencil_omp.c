/* OpenMP 2D 5-point Jacobi stencil on an n x n grid (interior points), rows split over the
 * threads by a static schedule:
 *   out[i][j] = w * (in[i-1][j] + in[i+1][j] + in[i][j-1] + in[i][j+1]) + c * in[i][j]
 * 6 FLOPs per point (4 add, 2 mul); as written, 5 reads and 1 write of 8 bytes = 48 bytes.
 * The parallel loop is outlined into `kernel_stencil_omp._omp_fn.0`.
 * Build: gcc -O3 -fopenmp ...; threads from OMP_NUM_THREADS. */
#include <omp.h>

#include "common.h"

NOINLINE void kernel_stencil_omp(long n, double *restrict out, const double *restrict in,
                                 double w, double c) {
#pragma omp parallel for schedule(static)
  for (long i = 1; i < n - 1; i++)
    for (long j = 1; j < n - 1; j++)
      out[i * n + j] = w * (in[(i - 1) * n + j] + in[(i + 1) * n + j] + in[i * n + j - 1] +
                            in[i * n + j + 1]) +
                       c * in[i * n + j];
}

int main(int argc, char **argv) {
  long n = arg_long(argc, argv, 1, 1000), reps = arg_long(argc, argv, 2, 10);
  double *a = xalloc(n * n * sizeof *a), *b = xalloc(n * n * sizeof *b);
  for (long i = 0; i < n * n; i++) a[i] = 1.0 + i % 11, b[i] = 0.0;
  double t = now_s();
  for (long r = 0; r < reps; r++) {
    kernel_stencil_omp(n, b, a, 0.2, 0.2);
    double *tmp = a;
    a = b, b = tmp;
  }
  t = now_s() - t;
  double check = 0;
  for (long i = 0; i < n * n; i++) check += a[i];
  double pts = (double)(n - 2) * (n - 2) * reps;
  printf("threads=%d ", omp_get_max_threads());
  report("stencil_omp", n, reps, 6.0 * pts, 48.0 * pts, t, check);
  return 0;
}
