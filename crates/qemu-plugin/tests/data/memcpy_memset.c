/* glibc memcpy, then memset to 7 and to 0 of N bytes, in one function (copy_and_fill) that
 * the test counts with its callees (scope=) at two sizes: the difference must be N2 - N1
 * bytes loaded and 3 (N2 - N1) stored (AArch64 glibc zeroes with DC ZVA). Usage:
 * memcpy_memset N */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
__attribute__((noinline)) void copy_and_fill(char *d, const char *s, long n) { memcpy(d, s, n); memset(d, 7, n); memset(d, 0, n); }
int main(int c, char **v) {
  long n = atol(v[1]);
  char *a = aligned_alloc(4096, 64 << 20), *b = aligned_alloc(4096, 64 << 20);
  copy_and_fill(a, b, n);
  return a[n / 2];
}
