/* Threads that each update an array of their own (no allocation, no synchronization
 * but the final join): every thread's accesses to `data` are the same, in the same
 * order, in every run, whatever the interleaving of the threads. Prints the array's
 * address and size. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define MAXT 8
#define N (1 << 16)
static double data[MAXT][N];
static double sums[MAXT];
static long reps;

static void *work(void *arg) {
    long t = (long)arg;
    double *a = data[t], s = 0.0;
    for (long r = 0; r < reps; r++)
        for (long i = 0; i < N; i++) {
            a[i] = a[i] * 0.5 + (double)(i + t);
            s += a[(i * 7 + r) % N];
        }
    sums[t] = s;
    return NULL;
}

int main(int argc, char **argv) {
    int nt = argc > 1 ? atoi(argv[1]) : 2;
    reps = argc > 2 ? atol(argv[2]) : 2;
    if (nt < 1 || nt > MAXT)
        return 2;
    pthread_t th[MAXT];
    for (long t = 1; t < nt; t++)
        if (pthread_create(&th[t], NULL, work, (void *)t))
            return 1;
    work((void *)0);
    for (long t = 1; t < nt; t++)
        pthread_join(th[t], NULL);
    double s = 0.0;
    for (int t = 0; t < nt; t++)
        s += sums[t];
    printf("%p %zu %g\n", (void *)data, sizeof data, s);
    return 0;
}
