/* A test MPI program with a known imbalance and a known number of MPI calls per rank.
 *
 *   imbalance ITERS UNIT_MS [ACTION RANK AT]
 *
 * Rank r repeats ITERS times: (r + 1) x UNIT_MS of "work" (a sleep: time outside MPI that
 * does not depend on how many ranks share a CPU), one MPI_Allreduce of one double, and one
 * MPI_Sendrecv of (r + 1) KiB to the next rank around a ring. Then one MPI_Barrier. So
 * every rank makes exactly 2 x ITERS + 1 MPI calls between MPI_Init and MPI_Finalize, and
 * rank r's time outside MPI is ITERS x (r + 1) x UNIT_MS: load balance (1+2+..+n)/n/n.
 *
 * ACTION, at iteration AT of rank RANK:
 *   die       the rank kills itself with SIGKILL (a crashed rank);
 *   killhost  the rank kills its parent (the hpcscope measuring it) with SIGKILL, then
 *             goes on: a rank whose measurement dies without writing anything.
 * or, alone:
 *   split     no imbalance: each rank works UNIT_MS / size per iteration (strong scaling:
 *             the same total work split between the ranks).
 *
 * Each rank then prints its own clock's account, the reference the tests hold the measured
 * times to on a machine whatever its load (a sleep overshoots by what the scheduler adds):
 *   imbalance: rank R work W_S region E_S
 * W_S the seconds spent in the work sleeps, E_S from MPI_Init's return to MPI_Finalize's
 * call.
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

static void work_ms(double ms) {
  struct timespec t = {(time_t)(ms / 1000), (long)((ms - 1000 * (long)(ms / 1000)) * 1e6)};
  while (nanosleep(&t, &t) != 0) {
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  double start = now(), worked = 0;
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int iters = argc > 1 ? atoi(argv[1]) : 10;
  double unit = argc > 2 ? atof(argv[2]) : 10.0;
  const char *action = argc > 3 ? argv[3] : "";
  int at_rank = argc > 5 ? atoi(argv[4]) : -1;
  int at_iter = argc > 5 ? atoi(argv[5]) : -1;
  double work = strcmp(action, "split") ? (rank + 1) * unit : unit / size;
  int bytes = (rank + 1) * 1024, max_bytes = size * 1024;
  char *out = calloc(max_bytes, 1), *in = calloc(max_bytes, 1);
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  double x = rank, sum = 0;
  for (int i = 0; i < iters; i++) {
    if (rank == at_rank && i == at_iter) {
      if (!strcmp(action, "die")) raise(SIGKILL);
      if (!strcmp(action, "killhost")) kill(getppid(), SIGKILL);
    }
    double t = now();
    work_ms(work);
    worked += now() - t;
    MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Sendrecv(out, bytes, MPI_BYTE, next, 0, in, max_bytes, MPI_BYTE, prev, 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) printf("imbalance: %d ranks, %d iterations, sum %g\n", size, iters, sum);
  free(out);
  free(in);
  printf("imbalance: rank %d work %.6f region %.6f\n", rank, worked, now() - start);
  fflush(stdout);
  MPI_Finalize();
  return 0;
}
