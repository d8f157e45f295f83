/* A parent that forks a child which runs the same kernel twice and exits without exec:
   the plugin characterizes the parent only (tests/threads.rs). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>
__attribute__((noinline)) double work(double *a, long n) { double s = 0; for (long i = 0; i < n; i++) { a[i] = a[i] * 1.5 + 1.0; s += a[i]; } return s; }
int main(int argc, char **argv) {
  long n = atol(argv[1]);
  double *a = calloc(n, sizeof *a);
  double s = work(a, n);
  pid_t p = fork();
  if (p == 0) { double t = work(a, n); t += work(a, n); printf("child %g\n", t); exit(0); }
  waitpid(p, 0, 0);
  s += work(a, n);
  printf("parent %g\n", s);
  return 0;
}
