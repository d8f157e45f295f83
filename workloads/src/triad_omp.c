/* OpenMP STREAM triad: a[i] = b[i] + s * c[i], 2 FLOPs and 24 bytes per element, the loop
 * split over the threads by a static schedule (each of T threads gets n/T consecutive
 * elements when T divides n). The parallel loop is outlined by the compiler into
 * `kernel_triad_omp._omp_fn.0`, which every thread of the team runs.
 * Build: gcc -O3 -fopenmp ...; threads from OMP_NUM_THREADS. */
#include <omp.h>

#include "common.h"

NOINLINE void kernel_triad_omp(long n, double *restrict a, const double *restrict b,
                               const double *restrict c, double s) {
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; i++) a[i] = b[i] + s * c[i];
}

int main(int argc, char **argv) {
  long n = arg_long(argc, argv, 1, 1000000), reps = arg_long(argc, argv, 2, 10);
  double *a = xalloc(n * sizeof *a), *b = xalloc(n * sizeof *b), *c = xalloc(n * sizeof *c);
  for (long i = 0; i < n; i++) a[i] = 0.0, b[i] = 1.0 + i % 7, c[i] = 0.5 * (i % 3);
  double t = now_s();
  for (long r = 0; r < reps; r++) kernel_triad_omp(n, a, b, c, 3.0);
  t = now_s() - t;
  double check = 0;
  for (long i = 0; i < n; i++) check += a[i];
  printf("threads=%d ", omp_get_max_threads());
  report("triad_omp", n, reps, 2.0 * n * reps, 24.0 * n * reps, t, check);
  return 0;
}
