/* The STREAM triad a[i] = b[i] + s * c[i] on n doubles, n not a multiple of 8, on zmm
 * registers with an AVX-512 masked last iteration (vfmadd with {k}, masked loads and store),
 * as a compiler that vectorizes with masked epilogues writes it (gcc 12 does not: its
 * remainder is ymm and scalar code; the intrinsics make the masked tail certain). Build:
 * -O3 -march=x86-64-v4 -mprefer-vector-width=512. Analytical counts of kernel_triad: 2 n
 * FLOPs and 24 n bytes per repetition. */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) void kernel_triad(long n, double *restrict a, const double *restrict b,
                                            const double *restrict c, double s) {
  __m512d vs = _mm512_set1_pd(s);
  long i = 0;
  for (; i + 8 <= n; i += 8)
    _mm512_storeu_pd(a + i, _mm512_fmadd_pd(vs, _mm512_loadu_pd(c + i), _mm512_loadu_pd(b + i)));
  if (i < n) {
    __mmask8 m = (__mmask8)((1u << (n - i)) - 1);
    __m512d r = _mm512_mask_fmadd_pd(_mm512_maskz_loadu_pd(m, c + i), m, vs,
                                     _mm512_maskz_loadu_pd(m, b + i));
    _mm512_mask_storeu_pd(a + i, m, r);
  }
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 1000003, reps = argc > 2 ? atol(argv[2]) : 10;
  double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
  for (long i = 0; i < n; i++) a[i] = 0.0, b[i] = 1.0 + i % 7, c[i] = 2.0 - i % 5;
  for (long r = 0; r < reps; r++) kernel_triad(n, a, b, c, 3.0 + r);
  double check = 0;
  for (long i = 0; i < n; i++) check += a[i];
  printf("triad_masked n=%ld reps=%ld flops=%ld check=%g\n", n, reps, 2 * n * reps, check);
  return 0;
}
