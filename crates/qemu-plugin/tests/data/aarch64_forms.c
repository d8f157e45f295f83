/* One function per AArch64 memory access form (A64, AdvSIMD structures, atomics,
 * exclusives, SVE), each running its instruction ITERS times on a buffer. The test counts
 * each function as a region at two iteration counts and checks the difference against the
 * bytes of the form's memory operand (tests/forms.rs lists them).
 * Build: aarch64-linux-gnu-gcc -O1 -march=armv8.2-a+sve -static. Usage: aarch64_forms ITERS */
#include <stdio.h>
#include <stdlib.h>

static double buf[4096] __attribute__((aligned(64)));

#define K(name) __attribute__((noinline, noclone)) void k_##name(long n)
/* The instruction with x0 = an aligned place in the buffer. */
#define LOOP(insn, ...)                                                            \
  for (long i = 0; i < n; i++) {                                                   \
    double *p = &buf[(i & 31) * 16];                                               \
    __asm__ volatile("mov x0, %0\n\t" insn ::"r"(p) : "x0", "memory", __VA_ARGS__); \
  }

K(ldrb) { LOOP("ldrb w2, [x0]", "x2"); }
K(ldr_x) { LOOP("ldr x2, [x0]", "x2"); }
K(ldr_q) { LOOP("ldr q0, [x0]", "v0"); }
K(ldur_d) { LOOP("ldur d0, [x0, #3]", "v0"); }
K(strh) { LOOP("strh w2, [x0]", "x2"); }
K(str_q) { LOOP("str q0, [x0]", "v0"); }
K(ldp_x) { LOOP("ldp x2, x3, [x0]", "x2", "x3"); }
K(ldp_q) { LOOP("ldp q0, q1, [x0]", "v0", "v1"); }
K(stp_d) { LOOP("stp d0, d1, [x0]", "v0", "v1"); }
K(ldpsw) { LOOP("ldpsw x2, x3, [x0]", "x2", "x3"); }
K(ld1_8b) { LOOP("ld1 {v0.8b}, [x0]", "v0"); }
K(ld1_4x16b) { LOOP("ld1 {v0.16b, v1.16b, v2.16b, v3.16b}, [x0]", "v0", "v1", "v2", "v3"); }
K(st1_2x16b) { LOOP("st1 {v0.16b, v1.16b}, [x0]", "v0", "v1"); }
K(ld2_4s) { LOOP("ld2 {v0.4s, v1.4s}, [x0]", "v0", "v1"); }
K(ld4_2d) { LOOP("ld4 {v0.2d, v1.2d, v2.2d, v3.2d}, [x0]", "v0", "v1", "v2", "v3"); }
K(st3_8h) { LOOP("st3 {v0.8h, v1.8h, v2.8h}, [x0]", "v0", "v1", "v2"); }
K(ld1r_2d) { LOOP("ld1r {v0.2d}, [x0]", "v0"); }
K(ld1_lane_s) { LOOP("ld1 {v0.s}[1], [x0]", "v0"); }
K(st1_lane_d) { LOOP("st1 {v0.d}[1], [x0]", "v0"); }
K(ldadd_x) { LOOP("mov x2, #1\n\tldadd x2, x3, [x0]", "x2", "x3"); }
K(swp_w) { LOOP("swp w2, w3, [x0]", "x2", "x3"); }
K(cas_x) { LOOP("mov x2, #0\n\tcas x2, x3, [x0]", "x2", "x3"); }
K(casp_x) { LOOP("mov x2, #0\n\tmov x3, #0\n\tcasp x2, x3, x4, x5, [x0]", "x2", "x3", "x4", "x5"); }
K(ldxr_stxr) { LOOP("ldxr x2, [x0]\n\tstxr w4, x2, [x0]", "x2", "x4"); }
K(sve_ld1d) { LOOP("ptrue p0.d\n\tld1d {z0.d}, p0/z, [x0]", "p0", "z0"); }
K(sve_st1d) { LOOP("ptrue p0.d\n\tst1d {z0.d}, p0, [x0]", "p0", "z0"); }
K(sve_ld1rd) { LOOP("ptrue p0.d\n\tld1rd {z0.d}, p0/z, [x0]", "p0", "z0"); }
K(sve_ldr_z) { LOOP("ldr z0, [x0]", "z0"); }
K(sve_str_z) { LOOP("str z0, [x0]", "z0"); }

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 100;
  k_ldrb(n); k_ldr_x(n); k_ldr_q(n); k_ldur_d(n); k_strh(n); k_str_q(n);
  k_ldp_x(n); k_ldp_q(n); k_stp_d(n); k_ldpsw(n);
  k_ld1_8b(n); k_ld1_4x16b(n); k_st1_2x16b(n); k_ld2_4s(n); k_ld4_2d(n); k_st3_8h(n);
  k_ld1r_2d(n); k_ld1_lane_s(n); k_st1_lane_d(n);
  k_ldadd_x(n); k_swp_w(n); k_cas_x(n); k_casp_x(n); k_ldxr_stxr(n);
  k_sve_ld1d(n); k_sve_st1d(n); k_sve_ld1rd(n); k_sve_ldr_z(n); k_sve_str_z(n);
  printf("%g\n", buf[1]);
  return 0;
}
