/* Two hot functions in a 3:1 ratio of work (the ratio is the first argument's split), for
 * the perf import test: hpcscope's import of `perf record` must name the same top functions
 * with the same shares as `perf report`. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) double hot_a(long n) {
    double s = 0;
    for (long i = 0; i < n; i++) s += i * 0.5;
    return s;
}

__attribute__((noinline)) double hot_b(long n) {
    double s = 0;
    for (long i = 0; i < n; i++) s += i * 0.25;
    return s;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000000;
    long a = argc > 2 ? atol(argv[2]) : 3;
    double s = 0;
    for (int k = 0; k < 10; k++) {
        s += hot_a(a * n / 40);
        s += hot_b(n / 40);
    }
    printf("%g\n", s);
    return 0;
}
