/* Compute-bound kernel for the overhead benchmark: a dependent multiply-add chain over a
 * small array (L1-resident), no system calls inside the timed region. Prints its own
 * elapsed time so tracer start-up is not counted. Usage: compute [ITERATIONS] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double clk(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Wall time, and CPU time of this process (immune to other tenants of a shared machine,
 * but still charged with the probes that run in this process's context). */
static double now(void) { return clk(CLOCK_MONOTONIC); }
static double cpu(void) { return clk(CLOCK_PROCESS_CPUTIME_ID); }

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 600000;
	static double a[1024];
	for (int i = 0; i < 1024; i++)
		a[i] = 1.0 + i * 1e-6;
	double t0 = now(), c0 = cpu(), s = 0.0;
	for (long r = 0; r < n; r++)
		for (int i = 0; i < 1024; i++)
			s = s * 0.999999 + a[i];
	double t1 = now(), c1 = cpu();
	printf("time_s %.6f cpu_s %.6f checksum %.3f\n", t1 - t0, c1 - c0, s);
	return 0;
}
