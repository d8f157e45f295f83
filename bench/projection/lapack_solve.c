/* A driver of the reference BLAS and LAPACK (Fortran 77, Debian source package `lapack`,
 * fetched and built by bench/projection/real_apps.sh; not part of hpcscope): REPS times, a
 * matrix product C = A B (DGEMM), then the LU factorization with partial pivoting of A
 * (DGETRF, whose trailing updates are DGEMM) and one solve (DGETRS). The floating-point work
 * is the reference Fortran's; this file only fills the matrices, times and checks.
 *
 *   lapack_solve N REPS    (N x N matrices of doubles)
 *
 * Prints its own CPU time and its own FLOP count (2 N^3 for DGEMM, 2/3 N^3 - 1/2 N^2 for
 * DGETRF, 2 N^2 for DGETRS, per repetition: LAPACK Working Note 41's counts) and the
 * scaled residual of the last solve, ||A x - b||_inf / (||A||_inf ||x||_inf N eps), which
 * must be below 16 (the threshold of LAPACK's own tests); exit 1 otherwise. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void dgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k,
            const double *alpha, const double *a, const int *lda, const double *b,
            const int *ldb, const double *beta, double *c, const int *ldc);
void dgetrf_(const int *m, const int *n, double *a, const int *lda, int *ipiv, int *info);
void dgetrs_(const char *t, const int *n, const int *nrhs, const double *a, const int *lda,
             const int *ipiv, double *b, const int *ldb, int *info);

static double cpu_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 300;
  const int reps = argc > 2 ? atoi(argv[2]) : 3;
  if (n < 1 || reps < 1) {
    fprintf(stderr, "usage: lapack_solve N REPS (positive integers)\n");
    return 2;
  }
  const size_t nn = (size_t)n * n;
  double *a = malloc(nn * sizeof *a), *b = malloc(nn * sizeof *b), *c = malloc(nn * sizeof *c);
  double *lu = malloc(nn * sizeof *lu), *x = malloc(n * sizeof *x), *rhs = malloc(n * sizeof *rhs);
  int *ipiv = malloc(n * sizeof *ipiv), info = 0, one = 1;
  if (!a || !b || !c || !lu || !x || !rhs || !ipiv) {
    fprintf(stderr, "lapack_solve: out of memory\n");
    return 2;
  }
  unsigned s = 1;
  for (size_t i = 0; i < nn; i++) {
    s = s * 1103515245u + 12345u;
    a[i] = (double)(s >> 8) / 16777216.0 - 0.5;
    b[i] = a[i] * 0.5 + 0.25;
  }
  for (int i = 0; i < n; i++) rhs[i] = 1.0;
  const double alpha = 1.0, beta = 0.0;
  double check = 0;
  const double t0 = cpu_seconds();
  for (int r = 0; r < reps; r++) {
    dgemm_("N", "N", &n, &n, &n, &alpha, a, &n, b, &n, &beta, c, &n);
    memcpy(lu, a, nn * sizeof *a);
    memcpy(x, rhs, n * sizeof *x);
    dgetrf_(&n, &n, lu, &n, ipiv, &info);
    if (info != 0) {
      fprintf(stderr, "lapack_solve: DGETRF info=%d\n", info);
      return 1;
    }
    dgetrs_("N", &n, &one, lu, &n, ipiv, x, &n, &info);
    check += c[(size_t)(r % n) * n + r % n];
  }
  const double t = cpu_seconds() - t0;
  /* The check: scaled residual of the last solve. */
  double rmax = 0, anorm = 0, xmax = 0;
  for (int i = 0; i < n; i++) {
    double ri = -rhs[i], row = 0;
    for (int j = 0; j < n; j++) {
      ri += a[(size_t)j * n + i] * x[j];
      row += fabs(a[(size_t)j * n + i]);
    }
    rmax = fmax(rmax, fabs(ri));
    anorm = fmax(anorm, row);
    xmax = fmax(xmax, fabs(x[i]));
  }
  const double resid = rmax / (anorm * xmax * n * DBL_EPSILON);
  const double dn = n;
  const double flops = reps * (2 * dn * dn * dn + 2.0 / 3 * dn * dn * dn - 0.5 * dn * dn + 2 * dn * dn);
  printf("lapack_solve n=%d reps=%d cpu_s=%.6f flops=%.0f GFLOP/s %.4f residual %.3f %s check=%.6e\n",
         n, reps, t, flops, flops / t / 1e9, resid, resid < 16.0 ? "PASSED" : "FAILED", check);
  return resid < 16.0 ? 0 : 1;
}
