/* The semaphore-free half of sdt.c: `hpctest:tick`, N times per thread. */
#include <sys/sdt.h>

int ticks;

void *tick_thread(void *arg)
{
	long id = (long)arg;
	for (int i = 0; i < ticks; i++)
		DTRACE_PROBE2(hpctest, tick, id, i);
	return 0;
}
