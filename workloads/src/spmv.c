/* Sparse matrix-vector product y = A x, CSR, 5-point Laplacian-like pattern on a
 * sqrt(n) x sqrt(n) grid (n rows, up to 5 non-zeros per row).
 * 2 FLOPs per non-zero; bytes as written: per non-zero val (8) + col (4) + x[col] (8),
 * per row row_ptr[i+1] (8) + y (8); row_ptr[i] counted once per row too (8). */
#include "common.h"

NOINLINE void kernel_spmv(long nrows, const long *restrict row_ptr, const int *restrict col,
                          const double *restrict val, const double *restrict x,
                          double *restrict y) {
  for (long i = 0; i < nrows; i++) {
    double s = 0.0;
    for (long k = row_ptr[i]; k < row_ptr[i + 1]; k++) s += val[k] * x[col[k]];
    y[i] = s;
  }
}

int main(int argc, char **argv) {
  long n = arg_long(argc, argv, 1, 250000), reps = arg_long(argc, argv, 2, 10);
  long g = 1;
  while ((g + 1) * (g + 1) <= n) g++;
  n = g * g;
  long *row_ptr = xalloc((n + 1) * sizeof *row_ptr);
  int *col = xalloc(5 * n * sizeof *col);
  double *val = xalloc(5 * n * sizeof *val), *x = xalloc(n * sizeof *x), *y = xalloc(n * sizeof *y);
  long nnz = 0;
  for (long i = 0; i < g; i++)
    for (long j = 0; j < g; j++) {
      long r = i * g + j;
      row_ptr[r] = nnz;
      long nb[5][2] = {{i - 1, j}, {i, j - 1}, {i, j}, {i, j + 1}, {i + 1, j}};
      for (int q = 0; q < 5; q++)
        if (nb[q][0] >= 0 && nb[q][0] < g && nb[q][1] >= 0 && nb[q][1] < g) {
          col[nnz] = (int)(nb[q][0] * g + nb[q][1]);
          val[nnz] = q == 2 ? 4.0 : -1.0;
          nnz++;
        }
    }
  row_ptr[n] = nnz;
  for (long i = 0; i < n; i++) x[i] = 1.0 + i % 13;
  double t = now_s(), cpu = cpu_s();
  for (long r = 0; r < reps; r++) kernel_spmv(n, row_ptr, col, val, x, y);
  t = now_s() - t, cpu = cpu_s() - cpu;
  double check = 0;
  for (long i = 0; i < n; i++) check += y[i];
  report_cpu("spmv", n, reps, 2.0 * nnz * reps, (20.0 * nnz + 24.0 * n) * reps, t, cpu, check);
  return 0;
}
