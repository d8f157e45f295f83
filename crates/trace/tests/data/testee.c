/*
 * A program with known behaviour for the probe tests.
 *
 *   testee counts W F S K   W writes of 64 bytes to /dev/null, S sleeps of 10 ms, a thread
 *                           that touches F fresh pages, K calls of hs_work(); then one
 *                           write(2) to stdout with what the kernel counted for the thread:
 *                           "tid T minflt N majflt M nvcsw V nivcsw I"
 *   testee spin SECONDS     ~90% of the time in hot_function(), ~10% in cold_function()
 *   testee stacks SECONDS   the time spread over 4^12 call paths: a random chain of 12
 *                           calls of branch_0() to branch_3() above leaf(), each chain
 *                           about 10 us (so a sampled profile sees thousands of stacks)
 *
 * Build: cc -O0 -g -fno-omit-frame-pointer -pthread testee.c -o testee
 * (-O0 keeps a frame pointer in leaf functions too, so sampled stacks show their callers)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

__attribute__((noinline)) unsigned long hs_work(unsigned long n)
{
	unsigned long s = 0;
	for (unsigned long i = 0; i < n; i++)
		s += i * i;
	sink = s;
	return s;
}

static long pages;
static char thread_report[160];
static sem_t reported;

static void *toucher(void *arg)
{
	(void)arg;
	long page = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	for (long i = 0; i < pages; i++)
		p[i * page] = 1;
	struct rusage ru;
	/* Format once before measuring, so the stack and buffer pages snprintf touches are
	 * already faulted in: after getrusage() the thread must not fault again. */
	getrusage(RUSAGE_THREAD, &ru);
	snprintf(thread_report, sizeof thread_report, "tid %ld minflt %ld majflt %ld nvcsw %ld nivcsw %ld\n",
		 (long)syscall(SYS_gettid), ru.ru_minflt, ru.ru_majflt, ru.ru_nvcsw, ru.ru_nivcsw);
	getrusage(RUSAGE_THREAD, &ru);
	snprintf(thread_report, sizeof thread_report, "tid %ld minflt %ld majflt %ld nvcsw %ld nivcsw %ld\n",
		 (long)syscall(SYS_gettid), ru.ru_minflt, ru.ru_majflt, ru.ru_nvcsw, ru.ru_nivcsw);
	sem_post(&reported);
	/* Never return: the thread-exit path of the C library faults in a few pages the
	 * count above would miss; the process's exit_group ends this thread in the kernel. */
	for (;;)
		pause();
	return NULL;
}

__attribute__((noinline)) double hot_function(double x)
{
	for (int i = 0; i < 1000; i++)
		x = x * 1.0000001 + 1e-9;
	return x;
}

__attribute__((noinline)) double cold_function(double x)
{
	for (int i = 0; i < 1000; i++)
		x = x * 0.9999999 + 1e-9;
	return x;
}

static unsigned long long chain_rng = 88172645463325252ULL;

__attribute__((noinline)) void leaf(void)
{
	for (int i = 0; i < 5000; i++)
		sink += i;
}

void branch(int depth);
/* Not tail calls (-O0, and work after the call): each branch stays a frame. */
#define BRANCH(n)                                                                          \
	__attribute__((noinline)) void branch_##n(int depth)                             \
	{                                                                                  \
		if (depth == 0)                                                            \
			leaf();                                                            \
		else                                                                       \
			branch(depth - 1);                                                 \
		sink++;                                                                    \
	}
BRANCH(0)
BRANCH(1)
BRANCH(2)
BRANCH(3)

__attribute__((noinline)) void branch(int depth)
{
	chain_rng ^= chain_rng << 13;
	chain_rng ^= chain_rng >> 7;
	chain_rng ^= chain_rng << 17;
	switch (chain_rng & 3) {
	case 0: branch_0(depth); break;
	case 1: branch_1(depth); break;
	case 2: branch_2(depth); break;
	default: branch_3(depth); break;
	}
	sink++;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[1], "spin") == 0) {
		double end = now() + atof(argv[2]), x = 1.0;
		while (now() < end) {
			for (int i = 0; i < 90; i++)
				x = hot_function(x);
			for (int i = 0; i < 10; i++)
				x = cold_function(x);
		}
		sink = (unsigned long)x;
		return 0;
	}
	if (argc >= 3 && strcmp(argv[1], "stacks") == 0) {
		double end = now() + atof(argv[2]);
		while (now() < end)
			branch(11);
		return 0;
	}
	if (argc < 6 || strcmp(argv[1], "counts") != 0)
		return 2;
	long w = atol(argv[2]), s = atol(argv[4]), k = atol(argv[5]);
	pages = atol(argv[3]);
	char buf[64] = { 0 };
	int fd = open("/dev/null", O_WRONLY);
	for (long i = 0; i < w; i++)
		if (write(fd, buf, sizeof buf) != sizeof buf)
			return 1;
	struct timespec ten_ms = { 0, 10 * 1000 * 1000 };
	for (long i = 0; i < s; i++)
		nanosleep(&ten_ms, NULL);
	pthread_t t;
	sem_init(&reported, 0, 0);
	pthread_create(&t, NULL, toucher, NULL);
	while (sem_wait(&reported) != 0)
		;
	for (long i = 0; i < k; i++)
		hs_work(100 + (i & 7));
	if (write(1, thread_report, strlen(thread_report)) < 0)
		return 1;
	return 0;
}
