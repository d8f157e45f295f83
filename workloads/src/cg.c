/* Conjugate gradient (MiniFE-like) on the 2D 5-point Laplacian in CSR form, on a
 * sqrt(n) x sqrt(n) grid; REPS is the number of CG iterations (no convergence test).
 * Per iteration: q = A p (2 FLOPs per non-zero), alpha = rr / (p . q), x += alpha p,
 * r -= alpha q, rr' = r . r, p = r + beta p: 10 FLOPs per row besides the SpMV, plus 2
 * divisions per iteration. Bytes as written (r . r reads r once), E the element size (8 in
 * double): SpMV E + 4 + E per non-zero and 16 + E per row, then 12 E per row. */
#include "common.h"

NOINLINE real kernel_cg(long n, long iters, const long *restrict row_ptr,
                        const int *restrict col, const real *restrict val,
                        real *restrict x, real *restrict r, real *restrict p,
                        real *restrict q) {
  real rr = 0.0;
  for (long i = 0; i < n; i++) rr += r[i] * r[i];
  for (long it = 0; it < iters; it++) {
    for (long i = 0; i < n; i++) {
      real s = 0.0;
      for (long k = row_ptr[i]; k < row_ptr[i + 1]; k++) s += val[k] * p[col[k]];
      q[i] = s;
    }
    real pq = 0.0;
    for (long i = 0; i < n; i++) pq += p[i] * q[i];
    real alpha = rr / pq;
    for (long i = 0; i < n; i++) x[i] += alpha * p[i];
    for (long i = 0; i < n; i++) r[i] -= alpha * q[i];
    real rr_new = 0.0;
    for (long i = 0; i < n; i++) rr_new += r[i] * r[i];
    real beta = rr_new / rr;
    rr = rr_new;
    for (long i = 0; i < n; i++) p[i] = r[i] + beta * p[i];
  }
  return rr;
}

int main(int argc, char **argv) {
  long n = arg_long(argc, argv, 1, 250000), reps = arg_long(argc, argv, 2, 10);
  long g = 1;
  while ((g + 1) * (g + 1) <= n) g++;
  n = g * g;
  long *row_ptr = xalloc((n + 1) * sizeof *row_ptr);
  int *col = xalloc(5 * n * sizeof *col);
  real *val = xalloc(5 * n * sizeof *val);
  real *x = xalloc(n * sizeof *x), *r = xalloc(n * sizeof *r), *p = xalloc(n * sizeof *p),
       *q = xalloc(n * sizeof *q);
  long nnz = 0;
  for (long i = 0; i < g; i++)
    for (long j = 0; j < g; j++) {
      long row = i * g + j;
      row_ptr[row] = nnz;
      long nb[5][2] = {{i - 1, j}, {i, j - 1}, {i, j}, {i, j + 1}, {i + 1, j}};
      for (int k = 0; k < 5; k++)
        if (nb[k][0] >= 0 && nb[k][0] < g && nb[k][1] >= 0 && nb[k][1] < g) {
          col[nnz] = (int)(nb[k][0] * g + nb[k][1]);
          val[nnz] = k == 2 ? 4.0 : -1.0;
          nnz++;
        }
    }
  row_ptr[n] = nnz;
  for (long i = 0; i < n; i++) x[i] = 0.0, r[i] = 1.0 + i % 3, p[i] = r[i], q[i] = 0.0;
  double t = now_s(), cpu = cpu_s();
  double rr = (double)kernel_cg(n, reps, row_ptr, col, val, x, r, p, q);
  t = now_s() - t, cpu = cpu_s() - cpu;
  /* The initial r . r: 2 FLOPs and one element per row, once. */
  double flops = (2.0 * nnz + 10.0 * n + 2.0) * reps + 2.0 * n;
  double e = (double)sizeof(real);
  double bytes = ((2.0 * e + 4.0) * nnz + (16.0 + e) * n + 12.0 * e * n) * reps + e * n;
  report_cpu("cg", n, reps, flops, bytes, t, cpu, rr);
  return 0;
}
