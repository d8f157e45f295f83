/* A program with hpcscope region markers: two regions, one nested, and threads.
 * Build: cc -O2 -pthread marker_demo.c -I crates/markers/include -L target/release \
 *           -lhpcscope_markers -o marker_demo
 * Run:   hpcscope counters run --markers -- ./marker_demo */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "hpcscope_markers.h"

#define N (1 << 20)

static void *worker(void *arg) {
    double *a = malloc(N * sizeof(double));
    hpcscope_region_start("triad");
    for (int r = 0; r < 20; r++)
        for (int i = 0; i < N; i++) a[i] = a[i] * 0.5 + 1.0;
    hpcscope_region_stop("triad");
    free(a);
    return arg;
}

int main(void) {
    hpcscope_markers_init();
    hpcscope_region_start("main");
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    hpcscope_region_stop("main");
    printf("done\n");
    return 0;
}
