/* Unstructured edge loop (MG-CFD-like flux accumulation): for each edge e = (a, b)
 *   f = w[e] * (q[a] - q[b]);  res[a] -= f;  res[b] += f;
 * over a mesh whose edges join grid neighbours in a shuffled order (indirect access).
 * 4 FLOPs per edge (sub, mul, sub, add); as written: two 4-byte indices, w, q[a], q[b],
 * res[a], res[b] read and written (7 elements): 64 bytes per edge in double. */
#include "common.h"

NOINLINE void kernel_edge(long nedges, const int *restrict ea, const int *restrict eb,
                          const real *restrict w, const real *restrict q,
                          real *restrict res) {
  for (long e = 0; e < nedges; e++) {
    int a = ea[e], b = eb[e];
    real f = w[e] * (q[a] - q[b]);
    res[a] -= f;
    res[b] += f;
  }
}

int main(int argc, char **argv) {
  long n = arg_long(argc, argv, 1, 250000), reps = arg_long(argc, argv, 2, 10);
  long g = 1;
  while ((g + 1) * (g + 1) <= n) g++;
  n = g * g;
  long ne = 2 * g * (g - 1);
  int *ea = xalloc(ne * sizeof *ea), *eb = xalloc(ne * sizeof *eb);
  real *w = xalloc(ne * sizeof *w), *q = xalloc(n * sizeof *q), *res = xalloc(n * sizeof *res);
  long e = 0;
  for (long i = 0; i < g; i++)
    for (long j = 0; j < g; j++) {
      if (j + 1 < g) ea[e] = (int)(i * g + j), eb[e] = (int)(i * g + j + 1), e++;
      if (i + 1 < g) ea[e] = (int)(i * g + j), eb[e] = (int)((i + 1) * g + j), e++;
    }
  /* Deterministic shuffle (LCG) so consecutive edges touch scattered nodes. */
  unsigned long s = 12345;
  for (long k = ne - 1; k > 0; k--) {
    s = s * 6364136223846793005UL + 1442695040888963407UL;
    long m = (long)((s >> 33) % (unsigned long)(k + 1));
    int ta = ea[k], tb = eb[k];
    ea[k] = ea[m], eb[k] = eb[m], ea[m] = ta, eb[m] = tb;
  }
  for (long k = 0; k < ne; k++) w[k] = 0.1 + k % 3;
  for (long k = 0; k < n; k++) q[k] = 1.0 + k % 17, res[k] = 0.0;
  double t = now_s(), cpu = cpu_s();
  for (long r = 0; r < reps; r++) kernel_edge(ne, ea, eb, w, q, res);
  t = now_s() - t, cpu = cpu_s() - cpu;
  double check = 0;
  for (long k = 0; k < n; k++) check += res[k] * (k % 7);
  report_cpu("edge", ne, reps, 4.0 * ne * reps, (8.0 + 7.0 * sizeof(real)) * ne * reps, t, cpu, check);
  return 0;
}
