/* 2D 5-point Jacobi stencil on an n x n grid (interior points):
 *   out[i][j] = w * (in[i-1][j] + in[i+1][j] + in[i][j-1] + in[i][j+1]) + c * in[i][j]
 * 6 FLOPs per point (4 add, 2 mul); as written, 5 reads and 1 write of an element = 48 bytes
 * in double.
 * (A compiler may keep a neighbour in a register; then fewer bytes are loaded.) */
#include "common.h"

NOINLINE void kernel_stencil(long n, real *restrict out, const real *restrict in, real w,
                             real c) {
  for (long i = 1; i < n - 1; i++)
    for (long j = 1; j < n - 1; j++)
      out[i * n + j] = w * (in[(i - 1) * n + j] + in[(i + 1) * n + j] + in[i * n + j - 1] +
                            in[i * n + j + 1]) +
                       c * in[i * n + j];
}

int main(int argc, char **argv) {
  long n = arg_long(argc, argv, 1, 1000), reps = arg_long(argc, argv, 2, 10);
  real *a = xalloc(n * n * sizeof *a), *b = xalloc(n * n * sizeof *b);
  for (long i = 0; i < n * n; i++) a[i] = 1.0 + i % 11, b[i] = 0.0;
  double t = now_s(), cpu = cpu_s();
  for (long r = 0; r < reps; r++) {
    kernel_stencil(n, b, a, 0.2, 0.2);
    real *tmp = a;
    a = b, b = tmp;
  }
  t = now_s() - t, cpu = cpu_s() - cpu;
  double check = 0;
  for (long i = 0; i < n * n; i++) check += a[i];
  double pts = (double)(n - 2) * (n - 2) * reps;
  report_cpu("stencil", n, reps, 6.0 * pts, 6.0 * sizeof(real) * pts, t, cpu, check);
  return 0;
}
