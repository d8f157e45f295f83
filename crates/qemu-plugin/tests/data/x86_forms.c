/* One function per x86-64 memory access form, each running its instruction (or, for rep
 * strings, one 64-byte string operation) ITERS times on a buffer. The test counts each
 * function as a region at two iteration counts and checks the difference against the
 * bytes of the form's memory operand (tests/forms.rs lists them).
 * Build: gcc -O1 -mavx2 -mfma. Usage: x86_forms ITERS */
#include <stdio.h>
#include <stdlib.h>

static double buf[4096] __attribute__((aligned(64)));
static double dst[4096] __attribute__((aligned(64)));
static long long all_ones[4] __attribute__((aligned(32))) = {-1, -1, -1, -1};
static long long half[4] __attribute__((aligned(32))) = {-1, -1, 0, 0};
static int idx[8] = {0, 1, 2, 3, 4, 5, 6, 7};

#define K(name) __attribute__((noinline, noclone)) void k_##name(long n)
#define LOOP(...) \
  for (long i = 0; i < n; i++) __asm__ volatile(__VA_ARGS__)
/* One rep string operation per iteration; rdi, rsi and rcx are consumed. */
#define REP(insn, count, src) \
  for (long i = 0; i < n; i++) {                                                       \
    void *d = dst, *s = (void *)(src);                                                 \
    long c = (count);                                                                  \
    __asm__ volatile(insn : "+D"(d), "+S"(s), "+c"(c) : "a"(0L) : "memory");           \
  }

K(movsd_load) { LOOP("movsd %0, %%xmm0" :: "m"(buf[i & 63]) : "xmm0"); }
K(movupd_load) { LOOP("movupd %0, %%xmm0" :: "m"(buf[i & 63]) : "xmm0"); }
K(vmovupd_load_ymm) { LOOP("vmovupd %0, %%ymm0" :: "m"(buf[i & 63]) : "xmm0"); }
K(movsd_store) { LOOP("movsd %%xmm0, %0" : "=m"(dst[i & 63])); }
K(movupd_store) { LOOP("movupd %%xmm0, %0" : "=m"(dst[i & 63])); }
K(vmovupd_store_ymm) { LOOP("vmovupd %%ymm0, %0" : "=m"(dst[i & 63])); }
K(addsd_mem) { LOOP("addsd %0, %%xmm0" :: "m"(buf[i & 63]) : "xmm0"); }
K(mulps_mem) { LOOP("mulps %0, %%xmm0" :: "m"(buf[(i & 31) * 2]) : "xmm0"); }
K(vaddpd_mem_ymm) { LOOP("vaddpd %0, %%ymm1, %%ymm0" :: "m"(buf[i & 63]) : "xmm0"); }
K(vfmadd231sd_mem) { LOOP("vfmadd231sd %0, %%xmm1, %%xmm0" :: "m"(buf[i & 63]) : "xmm0"); }
K(vfmadd231ss_mem) { LOOP("vfmadd231ss %0, %%xmm1, %%xmm0" :: "m"(buf[i & 63]) : "xmm0"); }
K(vfmadd231pd_mem_ymm) { LOOP("vfmadd231pd %0, %%ymm1, %%ymm0" :: "m"(buf[i & 63]) : "xmm0"); }
K(cvtdq2pd_mem) { LOOP("cvtdq2pd %0, %%xmm0" :: "m"(buf[i & 63]) : "xmm0"); }
K(vcvtdq2pd_mem_ymm) { LOOP("vcvtdq2pd %0, %%ymm0" :: "m"(buf[i & 63]) : "xmm0"); }
K(vbroadcastsd) { LOOP("vbroadcastsd %0, %%ymm0" :: "m"(buf[i & 63]) : "xmm0"); }
K(add_rmw) { LOOP("addq $1, %0" : "+m"(dst[i & 63])); }
K(rep_movsb) { REP("rep movsb", 64, buf); }
K(rep_movsw) { REP("rep movsw", 32, buf); }
K(rep_movsd) { REP("rep movsl", 16, buf); }
K(rep_movsq) { REP("rep movsq", 8, buf); }
K(rep_stosb) { REP("rep stosb", 64, buf); }
K(rep_stosw) { REP("rep stosw", 32, buf); }
K(rep_stosd) { REP("rep stosl", 16, buf); }
K(rep_stosq) { REP("rep stosq", 8, buf); }
K(vgatherdpd) {
  LOOP("vmovdqa %1, %%ymm2\n\tvmovdqu %2, %%xmm3\n\tvgatherdpd %%ymm2, (%0,%%xmm3,8), %%ymm0"
       :: "r"(buf), "m"(all_ones), "m"(idx) : "xmm0", "xmm2", "xmm3");
}
K(vgatherdpd_half_mask) {
  LOOP("vmovdqa %1, %%ymm2\n\tvmovdqu %2, %%xmm3\n\tvgatherdpd %%ymm2, (%0,%%xmm3,8), %%ymm0"
       :: "r"(buf), "m"(half), "m"(idx) : "xmm0", "xmm2", "xmm3");
}
K(vpgatherdd_ymm) {
  LOOP("vmovdqa %1, %%ymm2\n\tvmovdqu %2, %%ymm3\n\tvpgatherdd %%ymm2, (%0,%%ymm3,4), %%ymm0"
       :: "r"(buf), "m"(all_ones), "m"(idx) : "xmm0", "xmm2", "xmm3");
}
K(vmaskmovpd_store_half) {
  LOOP("vmovdqa %1, %%ymm2\n\tvmaskmovpd %%ymm0, %%ymm2, %0" : "=m"(dst[i & 63]) : "m"(half) : "xmm2");
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 100;
  k_movsd_load(n); k_movupd_load(n); k_vmovupd_load_ymm(n);
  k_movsd_store(n); k_movupd_store(n); k_vmovupd_store_ymm(n);
  k_addsd_mem(n); k_mulps_mem(n); k_vaddpd_mem_ymm(n);
  k_vfmadd231sd_mem(n); k_vfmadd231ss_mem(n); k_vfmadd231pd_mem_ymm(n);
  k_cvtdq2pd_mem(n); k_vcvtdq2pd_mem_ymm(n); k_vbroadcastsd(n); k_add_rmw(n);
  k_rep_movsb(n); k_rep_movsw(n); k_rep_movsd(n); k_rep_movsq(n);
  k_rep_stosb(n); k_rep_stosw(n); k_rep_stosd(n); k_rep_stosq(n);
  k_vgatherdpd(n); k_vgatherdpd_half_mask(n); k_vpgatherdd_ymm(n); k_vmaskmovpd_store_half(n);
  printf("%g\n", dst[1]);
  return 0;
}
