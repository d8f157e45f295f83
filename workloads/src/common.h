/* Shared helpers of the reference kernels: arguments, timing, the result line.
 *
 * Every program takes `[SIZE] [REPS]` and prints one line of key=value pairs:
 *   kernel=<name> n=<size> reps=<reps> flops=<F> bytes=<B> time_s=<t> gflops=<F/t/1e9> check=<x> cpu_s=<c>
 * where time_s is the wall time of the main loop and cpu_s the CPU time the process spent in
 * it (a busy machine delays the wall clock, much less the CPU time of a one-thread loop),
 * flops and bytes are the analytic counts of the main loop over all repetitions,
 * counted as written in the source: every array reference is one access of its element
 * size, every +, -, * is one FLOP (a multiply-add is 2). */
#ifndef HPCSCOPE_WORKLOAD_COMMON_H
#define HPCSCOPE_WORKLOAD_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Kernels are separate functions (a region can select `kernel_<name>`) that the compiler
 * may neither inline nor treat as pure and hoist out of the repetition loop (noipa). */
#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noipa))
#endif

/* The floating-point type of the kernels' data: double, or float with -DREAL=float (the
 * validation protocol's precision pairs). The counts are per element of this type. */
#ifndef REAL
#define REAL double
#endif
typedef REAL real;

static inline double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline long arg_long(int argc, char **argv, int i, long dflt) {
  if (argc > i) {
    char *end;
    long v = strtol(argv[i], &end, 0);
    if (*end != '\0' || v <= 0) {
      fprintf(stderr, "argument %d ('%s') must be a positive integer\n", i, argv[i]);
      exit(2);
    }
    return v;
  }
  return dflt;
}

static inline void *xalloc(size_t bytes) {
  void *p = NULL;
  if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0) {
    fprintf(stderr, "out of memory (%zu bytes)\n", bytes);
    exit(3);
  }
  return p;
}

/* The result line without cpu_s (multi-threaded kernels: their CPU time is every thread's). */
static inline void report(const char *name, long n, long reps, double flops, double bytes,
                          double t, double check) {
  printf("kernel=%s n=%ld reps=%ld flops=%.0f bytes=%.0f time_s=%.6f gflops=%.4f check=%.6e\n",
         name, n, reps, flops, bytes, t, t > 0 ? flops / t * 1e-9 : 0.0, check);
}

/* The result line with the CPU time c of the main loop (one-thread kernels). */
static inline void report_cpu(const char *name, long n, long reps, double flops, double bytes,
                              double t, double c, double check) {
  printf("kernel=%s n=%ld reps=%ld flops=%.0f bytes=%.0f time_s=%.6f gflops=%.4f check=%.6e "
         "cpu_s=%.6f\n",
         name, n, reps, flops, bytes, t, t > 0 ? flops / t * 1e-9 : 0.0, check, c);
}

#endif
