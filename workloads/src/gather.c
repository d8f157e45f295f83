/* Random-permutation gather: y[i] += a * x[p[i]], with p a random permutation of 0..n-1
 * (a fixed seed: every run gathers in the same order). The SVE build gathers a vector of
 * x[p[i]] per instruction (one access per active element); a NEON or scalar build loads
 * them one by one, interleaved with the loads of p and y.
 * 2 FLOPs per element; bytes as written: p[i] (4) + x[p[i]] (8) + y[i] loaded and stored
 * (16) = 28 per element. */
#include "common.h"

NOINLINE void kernel_gather(long n, double a, const int *restrict p, const double *restrict x,
                            double *restrict y) {
  for (long i = 0; i < n; i++) y[i] += a * x[p[i]];
}

int main(int argc, char **argv) {
  long n = arg_long(argc, argv, 1, 1000000), reps = arg_long(argc, argv, 2, 10);
  if (n > 2147483647L) {
    fprintf(stderr, "n must be below 2^31 (indices are int)\n");
    return 2;
  }
  int *p = xalloc(n * sizeof *p);
  double *x = xalloc(n * sizeof *x), *y = xalloc(n * sizeof *y);
  for (long i = 0; i < n; i++) {
    p[i] = (int)i;
    x[i] = 1.0 + i % 7;
    y[i] = 0.0;
  }
  /* Fisher-Yates with a 64-bit LCG (Knuth's MMIX constants). */
  unsigned long long s = 12345;
  for (long i = n - 1; i > 0; i--) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    long j = (long)((s >> 33) % (unsigned long long)(i + 1));
    int t = p[i];
    p[i] = p[j];
    p[j] = t;
  }
  double t = now_s(), cpu = cpu_s();
  for (long r = 0; r < reps; r++) kernel_gather(n, 0.5, p, x, y);
  t = now_s() - t, cpu = cpu_s() - cpu;
  double check = 0;
  for (long i = 0; i < n; i++) check += y[i];
  report_cpu("gather", n, reps, 2.0 * n * reps, 28.0 * n * reps, t, cpu, check);
  return 0;
}
