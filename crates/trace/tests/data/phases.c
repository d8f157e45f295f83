/* Rates over time with a known schedule. For phase k = 0..K-1, at (k + 0.5) * PERIOD after
 * its start, it makes (k + 1) * N reads of 128 bytes from /dev/zero and as many writes of
 * 64 bytes to /dev/null, and touches (k + 1) * P new pages; it sleeps otherwise. It writes
 * nothing else. Build: cc -O1 phases.c -o phases. Usage: phases K N P PERIOD_MS */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	int k_max = argc > 1 ? atoi(argv[1]) : 3;
	long n = argc > 2 ? atol(argv[2]) : 1000;
	long p = argc > 3 ? atol(argv[3]) : 100;
	double period = (argc > 4 ? atof(argv[4]) : 200.0) * 1e-3;
	int zero = open("/dev/zero", O_RDONLY), null = open("/dev/null", O_WRONLY);
	long page = sysconf(_SC_PAGESIZE);
	char in[128], out[64] = { 0 };
	double t0 = now();
	for (int k = 0; k < k_max; k++) {
		double at = t0 + (k + 0.5) * period, d = at - now();
		if (d > 0) {
			struct timespec s = { (time_t)d, (long)((d - (time_t)d) * 1e9) };
			nanosleep(&s, NULL);
		}
		long m = (k + 1) * n, pages = (k + 1) * p;
		for (long i = 0; i < m; i++) {
			if (read(zero, in, sizeof in) != sizeof in || write(null, out, sizeof out) != sizeof out)
				return 1;
		}
		char *mem = mmap(NULL, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (mem == MAP_FAILED)
			return 1;
		for (long i = 0; i < pages; i++)
			mem[i * page] = 1;
	}
	double end = t0 + k_max * period, d = end - now();
	if (d > 0) {
		struct timespec s = { (time_t)d, (long)((d - (time_t)d) * 1e9) };
		nanosleep(&s, NULL);
	}
	return 0;
}
