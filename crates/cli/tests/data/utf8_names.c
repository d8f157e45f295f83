/* Two hot functions whose names are UTF-8, in a 3:1 ratio of work: the import of
 * `perf record` must read them (inferno 0.12 panicked on `计算密集型函数内核`, slicing it
 * inside a character) and name the same top functions with the same shares as
 * `perf report`. The test runs it under a command name that perf cuts inside a character. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) double 计算密集型函数内核(long n) {
    double s = 0;
    for (long i = 0; i < n; i++) s += i * 0.5;
    return s;
}

__attribute__((noinline)) double café_crème(long n) {
    double s = 0;
    for (long i = 0; i < n; i++) s += i * 0.25;
    return s;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000000;
    double s = 0;
    for (int k = 0; k < 10; k++) {
        s += 计算密集型函数内核(3 * n / 40);
        s += café_crème(n / 40);
    }
    printf("%g\n", s);
    return 0;
}
