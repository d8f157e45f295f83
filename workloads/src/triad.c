/* STREAM triad: a[i] = b[i] + s * c[i]. 2 FLOPs and 3 elements (24 bytes in double) per element. */
#include "common.h"

NOINLINE void kernel_triad(long n, real *restrict a, const real *restrict b,
                           const real *restrict c, real s) {
  for (long i = 0; i < n; i++) a[i] = b[i] + s * c[i];
}

int main(int argc, char **argv) {
  long n = arg_long(argc, argv, 1, 1000000), reps = arg_long(argc, argv, 2, 10);
  real *a = xalloc(n * sizeof *a), *b = xalloc(n * sizeof *b), *c = xalloc(n * sizeof *c);
  for (long i = 0; i < n; i++) a[i] = 0.0, b[i] = 1.0 + i % 7, c[i] = 2.0 - i % 5;
  double t = now_s(), cpu = cpu_s();
  for (long r = 0; r < reps; r++) kernel_triad(n, a, b, c, 3.0 + r);
  t = now_s() - t, cpu = cpu_s() - cpu;
  double check = 0;
  for (long i = 0; i < n; i++) check += a[i];
  report_cpu("triad", n, reps, 2.0 * n * reps, 3.0 * sizeof(real) * n * reps, t, cpu, check);
  return 0;
}
