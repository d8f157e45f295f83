/* All-pairs N-body (softened gravity), REPS time steps of n bodies.
 * Per ordered pair (i, j), j over all n bodies (the softening makes i == j harmless):
 *   dx, dy, dz = 3 sub; r2 = dx*dx + dy*dy + dz*dz + eps = 3 mul + 3 add;
 *   inv = 1 / sqrt(r2) = 1 sqrt + 1 div; s = m[j] * inv * inv * inv = 3 mul;
 *   ax += s * dx (and y, z) = 3 mul + 3 add                      -> 20 FLOPs per pair.
 * Per body and step: v += dt * a (6), x += dt * v (6)               -> 12 FLOPs.
 * Elements as written: per pair x, y, z, m of body j (4); per body and step x, y, z of i
 * (3), v read and written (6), x read and written again in the position update (6): 15
 * (in double, 32 and 120 bytes). With -DREAL=float, sqrt is sqrtf. */
#include <math.h>

#include "common.h"

#define SQRT(x) _Generic((x), float: sqrtf, default: sqrt)(x)

NOINLINE void kernel_nbody(long n, real *restrict x, real *restrict y, real *restrict z,
                           real *restrict vx, real *restrict vy, real *restrict vz,
                           const real *restrict m, real dt) {
  for (long i = 0; i < n; i++) {
    real xi = x[i], yi = y[i], zi = z[i], ax = 0.0, ay = 0.0, az = 0.0;
    for (long j = 0; j < n; j++) {
      real dx = x[j] - xi, dy = y[j] - yi, dz = z[j] - zi;
      real r2 = dx * dx + dy * dy + dz * dz + (real)1e-3;
      real inv = (real)1.0 / SQRT(r2);
      real s = m[j] * inv * inv * inv;
      ax += s * dx, ay += s * dy, az += s * dz;
    }
    vx[i] += dt * ax, vy[i] += dt * ay, vz[i] += dt * az;
  }
  for (long i = 0; i < n; i++) x[i] += dt * vx[i], y[i] += dt * vy[i], z[i] += dt * vz[i];
}

int main(int argc, char **argv) {
  long n = arg_long(argc, argv, 1, 2000), reps = arg_long(argc, argv, 2, 2);
  real *x = xalloc(n * sizeof *x), *y = xalloc(n * sizeof *y), *z = xalloc(n * sizeof *z);
  real *vx = xalloc(n * sizeof *vx), *vy = xalloc(n * sizeof *vy), *vz = xalloc(n * sizeof *vz);
  real *m = xalloc(n * sizeof *m);
  for (long i = 0; i < n; i++) {
    x[i] = (real)(i % 17), y[i] = (real)(i % 13) * (real)0.5, z[i] = (real)(i % 7) * (real)0.25;
    vx[i] = vy[i] = vz[i] = 0.0, m[i] = 1.0 + i % 3;
  }
  double t = now_s(), cpu = cpu_s();
  for (long r = 0; r < reps; r++) kernel_nbody(n, x, y, z, vx, vy, vz, m, (real)1e-3);
  t = now_s() - t, cpu = cpu_s() - cpu;
  double check = 0;
  for (long i = 0; i < n; i++) check += x[i] + y[i] + z[i];
  double pairs = (double)n * n * reps;
  report_cpu("nbody", n, reps, 20.0 * pairs + 12.0 * n * reps, 4.0 * sizeof(real) * pairs + 15.0 * sizeof(real) * n * reps, t, cpu,
         check);
  return 0;
}
