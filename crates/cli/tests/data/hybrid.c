/* MPI + OpenMP with a known split (eqs. 3.14-3.16). Rank r sleeps (r + 1) UNIT ms of serial
 * code, then runs a parallel region of 2 threads where thread t sleeps (t + 1) UNIT, then
 * waits at a barrier. With 2 ranks: rank 0 computes 3 UNIT (main thread 2, worker 2) and
 * waits UNIT at the barrier; rank 1 computes 4 UNIT (main thread 3, worker 2). Runtime
 * 4 UNIT: MPI efficiency 7/8, hybrid parallel efficiency 9/16, OpenMP efficiency 9/14.
 * Build: mpicc -O2 -fopenmp hybrid.c -o hybrid. Usage: mpirun -np 2 hybrid UNIT_MS */
#include <mpi.h>
#include <omp.h>
#include <stdlib.h>
#include <time.h>

static void nap(int ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&t, NULL);
}

int main(int argc, char **argv)
{
	int rank, unit = argc > 1 ? atoi(argv[1]) : 100;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	omp_set_num_threads(2);
	nap((rank + 1) * unit);
#pragma omp parallel
	nap((omp_get_thread_num() + 1) * unit);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
