/* Dense matrix multiply C += A * B, n x n, i-k-j order (unit stride inner loop).
 * 2 n^3 FLOPs; as written, per inner iteration B[k][j] and C[k][j] read and C written
 * (A[i][k] is hoisted): 3 n^3 elements (24 n^3 bytes in double). */
#include "common.h"

NOINLINE void kernel_gemm(long n, real *restrict c, const real *restrict a,
                          const real *restrict b) {
  for (long i = 0; i < n; i++)
    for (long k = 0; k < n; k++) {
      real aik = a[i * n + k];
      for (long j = 0; j < n; j++) c[i * n + j] += aik * b[k * n + j];
    }
}

int main(int argc, char **argv) {
  long n = arg_long(argc, argv, 1, 200), reps = arg_long(argc, argv, 2, 2);
  real *a = xalloc(n * n * sizeof *a), *b = xalloc(n * n * sizeof *b),
       *c = xalloc(n * n * sizeof *c);
  for (long i = 0; i < n * n; i++) a[i] = 1.0 + i % 5, b[i] = 0.5 - i % 3, c[i] = 0.0;
  double t = now_s(), cpu = cpu_s();
  for (long r = 0; r < reps; r++) kernel_gemm(n, c, a, b);
  t = now_s() - t, cpu = cpu_s() - cpu;
  double check = 0;
  for (long i = 0; i < n * n; i++) check += c[i];
  double n3 = (double)n * n * n * reps;
  report_cpu("gemm", n, reps, 2.0 * n3, 3.0 * sizeof(real) * n3, t, cpu, check);
  return 0;
}
