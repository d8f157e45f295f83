#include <stdlib.h>
#include <stdio.h>
__attribute__((noinline)) void kernel(long n, double *a, const double *b, const double *c) {
  for (long i = 0; i < n; i++) a[i] = b[i] + 3.0 * c[i];
}
int main(int argc, char **argv) {
  long n = atol(argv[1]), reps = atol(argv[2]);
  double *a = calloc(n, 8), *b = calloc(n, 8), *c = calloc(n, 8);
  for (long r = 0; r < reps; r++) kernel(n, a, b, c);
  printf("%f\n", a[n / 2]);
  return 0;
}
