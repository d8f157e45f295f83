/* A small kernel for the set-sampling gate test: a streaming update, an indirect
 * (pseudo-random) gather over 4 MiB, and loads that cross 64-byte lines. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1 << 19;
    double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    unsigned char *bytes = malloc(n * 8 + 64);
    if (!a || !b || !bytes)
        return 1;
    for (long i = 0; i < n; i++) {
        a[i] = (double)i;
        b[i] = 1.0 / (double)(i + 1);
    }
    memset(bytes, 1, n * 8 + 64);
    double s = 0.0;
    uint64_t x = 88172645463325252ull, t = 0;
    for (int rep = 0; rep < 3; rep++) {
        for (long i = 0; i < n; i++)
            a[i] = a[i] * 0.5 + b[i];
        for (long i = 0; i < n / 4; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            s += a[x % n];
        }
        for (long i = 0; i < n; i += 8) {
            uint64_t v;
            /* Offset 60 of a line: an 8-byte load across the boundary. */
            memcpy(&v, (void *)(bytes + i * 8 + 60), sizeof v);
            t += v;
        }
    }
    printf("%g %llu\n", s, (unsigned long long)t);
    return 0;
}
