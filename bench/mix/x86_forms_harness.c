#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <setjmp.h>
#include <sys/mman.h>
static sigjmp_buf jb;
static void h(int s){ siglongjmp(jb, s); }
int main(int argc, char **argv){
  FILE *f = fopen(argv[1], "rb"); static unsigned char blob[1<<20]; size_t n = fread(blob,1,sizeof blob,f); fclose(f);
  unsigned char *code = mmap(0, (n+4095)&~4095UL, PROT_READ|PROT_WRITE|PROT_EXEC, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0);
  memcpy(code, blob, n);
  unsigned char *buf = aligned_alloc(4096, 1<<16); memset(buf, 0, 1<<16);
  struct sigaction sa = {0}; sa.sa_handler = h; sa.sa_flags = SA_NODEFER;
  sigaction(SIGSEGV,&sa,0); sigaction(SIGILL,&sa,0); sigaction(SIGFPE,&sa,0); sigaction(SIGBUS,&sa,0);
  int reps = argc > 2 ? atoi(argv[2]) : 3, faults = 0;
  for (size_t off = 0; off < n; off += 16) {
    if (code[off] == 0xcc) continue;
    for (int r = 0; r < reps; r++) {
      if (sigsetjmp(jb, 1)) { faults++; break; }
      void *fn = code + off; void *p = buf + 8192;
      __asm__ volatile("vpxor %%ymm4,%%ymm4,%%ymm4\n\tmov %1,%%rdi\n\tcall *%0" :: "r"(fn), "r"(p) : "rdi","rax","rcx","rdx","rbx","r8","xmm0","xmm1","xmm2","xmm3","xmm4","xmm5","memory","cc");
    }
  }
  printf("faults %d\n", faults);
  return 0;
}
