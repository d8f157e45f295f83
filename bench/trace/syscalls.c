/* Syscall-heavy loop for the overhead benchmark: N 64-byte writes to /dev/null (default
 * 2,000,000). Prints its own elapsed time. Usage: syscalls [N] */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

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
	long n = argc > 1 ? atol(argv[1]) : 2000000;
	char buf[64] = { 0 };
	int fd = open("/dev/null", O_WRONLY);
	if (fd < 0)
		return 1;
	double t0 = now(), c0 = cpu();
	for (long i = 0; i < n; i++)
		if (write(fd, buf, sizeof buf) != sizeof buf)
			return 1;
	double t1 = now(), c1 = cpu();
	printf("time_s %.6f cpu_s %.6f writes %ld\n", t1 - t0, c1 - c0, n);
	return 0;
}
