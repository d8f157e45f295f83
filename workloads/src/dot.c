/* Dot product: s += x[i] * y[i]. 2 FLOPs and 16 bytes per element.
 * Without -ffast-math the sum stays in order: scalar on x86 and NEON, and an SVE
 * strictly-ordered reduction (FADDA) with SVE. */
#include "common.h"

NOINLINE double kernel_dot(long n, const double *restrict x, const double *restrict y) {
  double s = 0.0;
  for (long i = 0; i < n; i++) s += x[i] * y[i];
  return s;
}

int main(int argc, char **argv) {
  long n = arg_long(argc, argv, 1, 1000000), reps = arg_long(argc, argv, 2, 10);
  double *x = xalloc(n * sizeof *x), *y = xalloc(n * sizeof *y);
  for (long i = 0; i < n; i++) x[i] = 1.0 + i % 3, y[i] = 0.5 - i % 2;
  double check = 0;
  double t = now_s(), cpu = cpu_s();
  for (long r = 0; r < reps; r++) check += kernel_dot(n, x, y);
  t = now_s() - t, cpu = cpu_s() - cpu;
  report_cpu("dot", n, reps, 2.0 * n * reps, 16.0 * n * reps, t, cpu, check);
  return 0;
}
