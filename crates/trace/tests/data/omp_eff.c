/* OpenMP thread efficiency with a known answer: UNIT ms of serial code (a sleep) in the main
 * thread, then one parallel region of 2 threads in which thread i sleeps (i + 1) * UNIT ms.
 * The main thread computes 2 UNIT (serial and its share), the worker 2 UNIT, over a runtime
 * of 3 UNIT: eq. 3.7 over the threads gives 4/6. It prints what it measured itself
 * (omp_get_wtime): each thread's time in the region, the region's wall time from before
 * the fork to after the join, and the whole run.
 * Build: cc -O1 -fopenmp omp_eff.c -o omp_eff. Usage: omp_eff UNIT_MS [OUTPUT_FILE] */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void nap(int ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&t, NULL);
}

int main(int argc, char **argv)
{
	int unit = argc > 1 ? atoi(argv[1]) : 100;
	double region[2] = { 0, 0 };
	double t0 = omp_get_wtime();
	omp_set_num_threads(2);
	nap(unit);
	double w = omp_get_wtime();
#pragma omp parallel
	{
		int me = omp_get_thread_num();
		double a = omp_get_wtime();
		nap((me + 1) * unit);
		if (me < 2)
			region[me] = omp_get_wtime() - a;
	}
	double end = omp_get_wtime();
	FILE *f = argc > 2 ? fopen(argv[2], "w") : stdout;
	if (!f)
		return 1;
	fprintf(f, "region0_s %.6f region1_s %.6f wall_s %.6f total_s %.6f\n", region[0], region[1],
		end - w, end - t0);
	if (f != stdout)
		fclose(f);
	return 0;
}
