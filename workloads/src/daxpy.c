/* DAXPY: y[i] += a * x[i]. 2 FLOPs and 24 bytes (x, y read; y written) per element. */
#include "common.h"

NOINLINE void kernel_daxpy(long n, double a, const double *restrict x, double *restrict y) {
  for (long i = 0; i < n; i++) y[i] += a * x[i];
}

int main(int argc, char **argv) {
  long n = arg_long(argc, argv, 1, 1000000), reps = arg_long(argc, argv, 2, 10);
  double *x = xalloc(n * sizeof *x), *y = xalloc(n * sizeof *y);
  for (long i = 0; i < n; i++) x[i] = 1.0 + i % 3, y[i] = 0.5;
  double t = now_s(), cpu = cpu_s();
  for (long r = 0; r < reps; r++) kernel_daxpy(n, 1e-3 * (r + 1), x, y);
  t = now_s() - t, cpu = cpu_s() - cpu;
  double check = 0;
  for (long i = 0; i < n; i++) check += y[i];
  report_cpu("daxpy", n, reps, 2.0 * n * reps, 24.0 * n * reps, t, cpu, check);
  return 0;
}
