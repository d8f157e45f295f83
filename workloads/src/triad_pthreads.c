/* Triad with POSIX threads: a[i] = b[i] + s * c[i], 2 FLOPs and 24 bytes per element. T
 * threads (third argument, default 2) each run `kernel_triad_chunk` on n/T consecutive
 * elements (the last takes the remainder), REPS times, the main thread waiting.
 * Build: gcc -O3 -pthread ... */
#include <pthread.h>

#include "common.h"

NOINLINE void kernel_triad_chunk(long lo, long hi, double *restrict a, const double *restrict b,
                                 const double *restrict c, double s) {
  for (long i = lo; i < hi; i++) a[i] = b[i] + s * c[i];
}

struct job {
  long lo, hi, reps;
  double *a, *b, *c;
};

static void *worker(void *p) {
  struct job *j = p;
  for (long r = 0; r < j->reps; r++) kernel_triad_chunk(j->lo, j->hi, j->a, j->b, j->c, 3.0);
  return NULL;
}

int main(int argc, char **argv) {
  long n = arg_long(argc, argv, 1, 1000000), reps = arg_long(argc, argv, 2, 10);
  long threads = arg_long(argc, argv, 3, 2);
  double *a = xalloc(n * sizeof *a), *b = xalloc(n * sizeof *b), *c = xalloc(n * sizeof *c);
  for (long i = 0; i < n; i++) a[i] = 0.0, b[i] = 1.0 + i % 7, c[i] = 0.5 * (i % 3);
  pthread_t *tid = xalloc(threads * sizeof *tid);
  struct job *jobs = xalloc(threads * sizeof *jobs);
  double t = now_s();
  for (long k = 0; k < threads; k++) {
    jobs[k] = (struct job){k * (n / threads), k == threads - 1 ? n : (k + 1) * (n / threads),
                           reps, a, b, c};
    if (pthread_create(&tid[k], NULL, worker, &jobs[k]) != 0) {
      fprintf(stderr, "cannot create thread %ld\n", k);
      return 3;
    }
  }
  for (long k = 0; k < threads; k++) pthread_join(tid[k], NULL);
  t = now_s() - t;
  double check = 0;
  for (long i = 0; i < n; i++) check += a[i];
  printf("threads=%ld ", threads);
  report("triad_pthreads", n, reps, 2.0 * n * reps, 24.0 * n * reps, t, check);
  return 0;
}
