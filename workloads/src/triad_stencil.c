/* Triad then 2D 5-point stencil, for overhead measurements of the emulation pipeline.
 * Arguments: [N] [REPS]: triad on N*N elements, stencil on an N x N grid, REPS times each. */
#include "common.h"

NOINLINE void kernel_triad(long n, double *restrict a, const double *restrict b,
                           const double *restrict c, double s) {
  for (long i = 0; i < n; i++) a[i] = b[i] + s * c[i];
}

NOINLINE void kernel_stencil(long n, double *restrict out, const double *restrict in, double w,
                             double c) {
  for (long i = 1; i < n - 1; i++)
    for (long j = 1; j < n - 1; j++)
      out[i * n + j] = w * (in[(i - 1) * n + j] + in[(i + 1) * n + j] + in[i * n + j - 1] +
                            in[i * n + j + 1]) +
                       c * in[i * n + j];
}

int main(int argc, char **argv) {
  long n = arg_long(argc, argv, 1, 1000), reps = arg_long(argc, argv, 2, 10);
  long m = n * n;
  double *a = xalloc(m * sizeof *a), *b = xalloc(m * sizeof *b), *c = xalloc(m * sizeof *c);
  for (long i = 0; i < m; i++) a[i] = 0.0, b[i] = 1.0 + i % 7, c[i] = 2.0 - i % 5;
  double t = now_s(), cpu = cpu_s();
  for (long r = 0; r < reps; r++) kernel_triad(m, a, b, c, 3.0 + r);
  for (long r = 0; r < reps; r++) {
    kernel_stencil(n, b, a, 0.2, 0.2);
    double *tmp = a;
    a = b, b = tmp;
  }
  t = now_s() - t, cpu = cpu_s() - cpu;
  double check = 0;
  for (long i = 0; i < m; i++) check += a[i];
  double pts = (double)(n - 2) * (n - 2) * reps;
  report_cpu("triad_stencil", n, reps, 2.0 * m * reps + 6.0 * pts, 24.0 * m * reps + 48.0 * pts, t, cpu,
         check);
  return 0;
}
