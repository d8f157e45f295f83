/* Nearly all of its time in one function, `spin`, for as many iterations as its argument:
 * the native-sampling tests of hpcscope-mix and of `hpcscope mix`. */
#include <stdlib.h>
__attribute__((noinline)) double spin(long n) {
    double x = 0;
    for (long i = 0; i < n; i++) x = x * 0.999999 + 1.0;
    return x;
}
int main(int argc, char **argv) { return spin(atol(argv[1])) < 0; }
