/* OpenMP program with known runtime calls: one parallel region (GOMP_parallel) in which
 * each of OMP_NUM_THREADS threads passes BARRIERS explicit barriers (GOMP_barrier).
 * Build: cc -O0 -fopenmp omp.c -o omp. Usage: omp BARRIERS */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10;
	int threads = 0;
#pragma omp parallel
	{
#pragma omp single
		threads = omp_get_num_threads();
		for (int i = 0; i < n; i++) {
#pragma omp barrier
		}
	}
	printf("threads %d\n", threads);
	return 0;
}
