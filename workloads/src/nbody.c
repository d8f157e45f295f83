/* All-pairs N-body (softened gravity), REPS time steps of n bodies.
 * Per ordered pair (i, j), j over all n bodies (the softening makes i == j harmless):
 *   dx, dy, dz = 3 sub; r2 = dx*dx + dy*dy + dz*dz + eps = 3 mul + 3 add;
 *   inv = 1 / sqrt(r2) = 1 sqrt + 1 div; s = m[j] * inv * inv * inv = 3 mul;
 *   ax += s * dx (and y, z) = 3 mul + 3 add                      -> 20 FLOPs per pair.
 * Per body and step: v += dt * a (6), x += dt * v (6)               -> 12 FLOPs.
 * Bytes as written: per pair x, y, z, m of body j (32); per body and step x, y, z of i
 * (24), v read and written (48), x read and written again in the position update (48):
 * 120. */
#include <math.h>

#include "common.h"

NOINLINE void kernel_nbody(long n, double *restrict x, double *restrict y, double *restrict z,
                           double *restrict vx, double *restrict vy, double *restrict vz,
                           const double *restrict m, double dt) {
  for (long i = 0; i < n; i++) {
    double xi = x[i], yi = y[i], zi = z[i], ax = 0.0, ay = 0.0, az = 0.0;
    for (long j = 0; j < n; j++) {
      double dx = x[j] - xi, dy = y[j] - yi, dz = z[j] - zi;
      double r2 = dx * dx + dy * dy + dz * dz + 1e-3;
      double inv = 1.0 / sqrt(r2);
      double s = m[j] * inv * inv * inv;
      ax += s * dx, ay += s * dy, az += s * dz;
    }
    vx[i] += dt * ax, vy[i] += dt * ay, vz[i] += dt * az;
  }
  for (long i = 0; i < n; i++) x[i] += dt * vx[i], y[i] += dt * vy[i], z[i] += dt * vz[i];
}

int main(int argc, char **argv) {
  long n = arg_long(argc, argv, 1, 2000), reps = arg_long(argc, argv, 2, 2);
  double *x = xalloc(n * sizeof *x), *y = xalloc(n * sizeof *y), *z = xalloc(n * sizeof *z);
  double *vx = xalloc(n * sizeof *vx), *vy = xalloc(n * sizeof *vy), *vz = xalloc(n * sizeof *vz);
  double *m = xalloc(n * sizeof *m);
  for (long i = 0; i < n; i++) {
    x[i] = (double)(i % 17), y[i] = (double)(i % 13) * 0.5, z[i] = (double)(i % 7) * 0.25;
    vx[i] = vy[i] = vz[i] = 0.0, m[i] = 1.0 + i % 3;
  }
  double t = now_s(), cpu = cpu_s();
  for (long r = 0; r < reps; r++) kernel_nbody(n, x, y, z, vx, vy, vz, m, 1e-3);
  t = now_s() - t, cpu = cpu_s() - cpu;
  double check = 0;
  for (long i = 0; i < n; i++) check += x[i] + y[i] + z[i];
  double pairs = (double)n * n * reps;
  report_cpu("nbody", n, reps, 20.0 * pairs + 12.0 * n * reps, 32.0 * pairs + 120.0 * n * reps, t, cpu,
         check);
  return 0;
}
