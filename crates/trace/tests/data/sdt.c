/* USDT probes with known hit counts (built with <sys/sdt.h>, Debian's systemtap-sdt-dev):
 * `hpctest:tick` (sdt_tick.c, no semaphore) fires N times in each of T threads;
 * `hpctest:guarded` is guarded by a semaphore and fires N times in the main thread only
 * while a tracer holds the semaphore raised. The program prints how often it found it so.
 * Build: cc -O1 -pthread sdt.c sdt_tick.c -o sdt. Usage: sdt N T */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

__extension__ unsigned short hpctest_guarded_semaphore
	__attribute__((unused)) __attribute__((section(".probes")));

void *tick_thread(void *arg);
extern int ticks;

int main(int argc, char **argv)
{
	ticks = argc > 1 ? atoi(argv[1]) : 100;
	int threads = argc > 2 ? atoi(argv[2]) : 2;
	pthread_t t[64];
	if (threads > 64)
		threads = 64;
	for (long i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, tick_thread, (void *)i);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	long seen = 0;
	for (int i = 0; i < ticks; i++) {
		if (hpctest_guarded_semaphore) {
			seen++;
			DTRACE_PROBE1(hpctest, guarded, i);
		}
	}
	printf("guarded_enabled %ld\n", seen);
	return 0;
}
