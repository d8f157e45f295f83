/* Monte-Carlo particle transport in a 1D slab of cells (Quicksilver-like control flow:
 * branchy, scalar, data-dependent). Each particle repeatedly samples a distance to
 * collision, compares it with the distance to the cell face, and either crosses the face
 * or collides (absorbed with probability pa, else scattered into a new direction), until
 * absorbed or leaked. A 64-bit LCG gives the random numbers; -log(u) is the kernel's own
 * series (Horner, TERMS coefficients) so that all FLOPs are in `kernel_montecarlo`.
 * The FLOPs depend on the random walk, so the kernel counts events (integer counters):
 *   random number 2 (add, mul; the int->double conversion is not a FLOP),
 *   -log(u) 2 * TERMS + 4, flight 3 (collision distance div, face distance sub + div),
 *   collision 3, scatter 2, face crossing 1.
 * Bytes as written: per -log(u) the TERMS coefficients (8 each), per flight the cell's
 * cross-section (8), per collision or crossing the tally read and written (16). */
#include "common.h"

#define TERMS 8

/* 1 / (2k + 1): log(u) = 2 atanh(t), t = (u - 1) / (u + 1) = 2 sum t^(2k+1) / (2k + 1). */
static const double coef[TERMS] = {1.0,       1.0 / 3.0,  1.0 / 5.0,  1.0 / 7.0,
                                   1.0 / 9.0, 1.0 / 11.0, 1.0 / 13.0, 1.0 / 15.0};

static inline double uniform(unsigned long *s) {
  *s = *s * 6364136223846793005UL + 1442695040888963407UL;
  return ((double)(*s >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

static inline double neglog(double u) {
  double t = (u - 1.0) / (u + 1.0), t2 = t * t, sum = coef[TERMS - 1];
  for (int k = TERMS - 2; k >= 0; k--) sum = sum * t2 + coef[k];
  return -2.0 * t * sum;
}

NOINLINE void kernel_montecarlo(long nparticles, long ncells, const double *restrict sigma,
                                double *restrict tally, double pa, unsigned long seed,
                                long *restrict events) {
  long nrand = 0, nlog = 0, nflight = 0, ncoll = 0, nscat = 0, ncross = 0;
  for (long p = 0; p < nparticles; p++) {
    unsigned long s = seed + 7919UL * (unsigned long)p;
    long cell = ncells / 2;
    double pos = 0.5, mu = 1.0;
    for (;;) {
      double d_coll = neglog(uniform(&s)) / sigma[cell];
      double d_face = mu > 0.0 ? (1.0 - pos) / mu : (0.0 - pos) / mu;
      nrand++, nlog++, nflight++;
      if (d_coll < d_face) {
        pos += mu * d_coll;
        tally[cell] += d_coll;
        ncoll++, nrand++;
        if (uniform(&s) < pa) break;
        mu = 2.0 * uniform(&s) - 1.0;
        nscat++, nrand++;
        if (mu == 0.0) mu = 1e-9;
      } else {
        tally[cell] += d_face;
        ncross++;
        if (mu > 0.0) {
          cell++, pos = 0.0;
        } else {
          cell--, pos = 1.0;
        }
        if (cell < 0 || cell >= ncells) break;
      }
    }
  }
  events[0] = nrand, events[1] = nlog, events[2] = nflight;
  events[3] = ncoll, events[4] = nscat, events[5] = ncross;
}

int main(int argc, char **argv) {
  long n = arg_long(argc, argv, 1, 100000), reps = arg_long(argc, argv, 2, 1);
  long ncells = 64;
  double *sigma = xalloc(ncells * sizeof *sigma), *tally = xalloc(ncells * sizeof *tally);
  for (long c = 0; c < ncells; c++) sigma[c] = 0.5 + 0.05 * (double)(c % 9), tally[c] = 0.0;
  long ev[6], tot[6] = {0, 0, 0, 0, 0, 0};
  double t = now_s(), cpu = cpu_s();
  for (long r = 0; r < reps; r++) {
    kernel_montecarlo(n, ncells, sigma, tally, 0.3, 12345UL + (unsigned long)r, ev);
    for (int k = 0; k < 6; k++) tot[k] += ev[k];
  }
  t = now_s() - t, cpu = cpu_s() - cpu;
  double check = 0;
  for (long c = 0; c < ncells; c++) check += tally[c];
  double flops = 2.0 * tot[0] + (2.0 * TERMS + 4.0) * tot[1] + 3.0 * tot[2] + 3.0 * tot[3] +
                 2.0 * tot[4] + 1.0 * tot[5];
  double bytes = 8.0 * TERMS * tot[1] + 8.0 * tot[2] + 16.0 * (tot[3] + tot[5]);
  report_cpu("montecarlo", n, reps, flops, bytes, t, cpu, check);
  return 0;
}
