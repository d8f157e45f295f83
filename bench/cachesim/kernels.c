/* Small kernels whose memory traces validate hpcscope-cachesim against cachegrind.
 *
 *   kernels triad   N REPS   a[i] = b[i] + s * c[i]          (STREAM triad)
 *   kernels stencil N REPS   b[i] = (a[i-1] + a[i] + a[i+1]) / 3, then swap
 *
 * Build: gcc -O2 -o kernels kernels.c
 * The checksum goes to stdout so the compiler keeps the loops. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double *alloc(size_t n) {
    double *p = NULL;
    if (posix_memalign((void **)&p, 64, n * sizeof(double)) != 0) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

static double triad(size_t n, int reps) {
    double *a = alloc(n), *b = alloc(n), *c = alloc(n);
    for (size_t i = 0; i < n; i++) {
        a[i] = 0.0;
        b[i] = (double)i;
        c[i] = 2.0;
    }
    const double s = 3.0;
    for (int r = 0; r < reps; r++)
        for (size_t i = 0; i < n; i++)
            a[i] = b[i] + s * c[i];
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) sum += a[i];
    free(a);
    free(b);
    free(c);
    return sum;
}

static double stencil(size_t n, int reps) {
    double *a = alloc(n), *b = alloc(n);
    for (size_t i = 0; i < n; i++) a[i] = b[i] = (double)(i % 17);
    for (int r = 0; r < reps; r++) {
        for (size_t i = 1; i + 1 < n; i++)
            b[i] = (a[i - 1] + a[i] + a[i + 1]) * (1.0 / 3.0);
        double *t = a;
        a = b;
        b = t;
    }
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) sum += a[i];
    free(a);
    free(b);
    return sum;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s triad|stencil N REPS\n", argv[0]);
        return 2;
    }
    size_t n = strtoull(argv[2], NULL, 10);
    int reps = atoi(argv[3]);
    double sum;
    if (strcmp(argv[1], "triad") == 0)
        sum = triad(n, reps);
    else if (strcmp(argv[1], "stencil") == 0)
        sum = stencil(n, reps);
    else {
        fprintf(stderr, "unknown kernel '%s' (triad or stencil)\n", argv[1]);
        return 2;
    }
    printf("%s checksum %.6e\n", argv[1], sum);
    return 0;
}
