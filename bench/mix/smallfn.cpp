// A C++ code made of many small functions, the shape of object-oriented proxy applications
// (cells of a mesh, materials behind virtual calls, small accessors in other translation
// units that the compiler cannot inline): many short translation blocks, calls and returns,
// stack traffic, and several interleaved access streams. Used by bench/mix/breakdown.sh.
//
//   smallfn [CELLS] [STEPS]      (defaults 20000 cells, 20 steps)
//
// Prints one line like the reference kernels (workloads/src/common.h); `flops` counts the
// arithmetic of `kernel_smallfn` as written (+ - * / each one), `bytes` is not counted (0).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <vector>

#define NOINLINE __attribute__((noipa))

namespace {

double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

double cpu_s() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

struct State {
  double rho, u, e, p;
};

// Materials: an equation of state behind a virtual call (2 FLOPs each).
struct Material {
  virtual ~Material() = default;
  virtual double pressure(double rho, double e) const = 0;
};
struct IdealGas final : Material {
  double gm1;
  explicit IdealGas(double g) : gm1(g - 1.0) {}
  NOINLINE double pressure(double rho, double e) const override { return gm1 * rho * e; }
};
struct Stiffened final : Material {
  double gm1, pinf;
  Stiffened(double g, double p) : gm1(g - 1.0), pinf(p) {}
  NOINLINE double pressure(double rho, double e) const override { return gm1 * rho * e - pinf; }
};

struct Cell {
  State s;
  int mat;
  int left, right;  // neighbours (indices), shuffled a little: not a pure stream
};

// Small accessors and helpers, one call each.
NOINLINE double density(const Cell &c) { return c.s.rho; }
NOINLINE double velocity(const Cell &c) { return c.s.u; }
NOINLINE double energy(const Cell &c) { return c.s.e; }
NOINLINE double sound_speed(double p, double rho) { return std::sqrt(1.4 * p / rho); }  // 3
NOINLINE double flux(double a, double b, double c) { return 0.5 * (a + b) - 0.5 * c * (b - a); }  // 6
NOINLINE void set_state(Cell &c, double rho, double u, double e) {
  c.s.rho = rho;
  c.s.u = u;
  c.s.e = e;
}

struct Mesh {
  std::vector<Cell> cells;
  std::vector<std::unique_ptr<Material>> mats;
  NOINLINE const Cell &at(int i) const { return cells[i]; }
  NOINLINE const Material &material(int m) const { return *mats[m]; }
};

// One step: per cell, pressures of the cell and its neighbours, a sound speed, three
// fluxes and an update. FLOPs per cell: 3 pressures (2 each, the stiffened one 3) counted
// by `flops_of`, sound speed 3, three fluxes 6 each, update 6.
NOINLINE double kernel_smallfn(Mesh &m, std::vector<State> &next, double dt, double *flops) {
  double f = 0, check = 0;
  const int n = int(m.cells.size());
  for (int i = 0; i < n; ++i) {
    const Cell &c = m.at(i);
    const Cell &l = m.at(c.left);
    const Cell &r = m.at(c.right);
    double pc = m.material(c.mat).pressure(density(c), energy(c));
    double pl = m.material(l.mat).pressure(density(l), energy(l));
    double pr = m.material(r.mat).pressure(density(r), energy(r));
    f += (c.mat ? 3 : 2) + (l.mat ? 3 : 2) + (r.mat ? 3 : 2);
    double a = sound_speed(std::fabs(pc) + 1e-3, density(c));
    double frho = flux(density(l), density(r), a * dt);
    double fu = flux(velocity(l) + pl, velocity(r) + pr, a * dt);  // +2 adds
    double fe = flux(energy(l), energy(r), a * dt);
    f += 3 + 3 * (6 + 1) + 2;
    State &s = next[i];
    s.rho = density(c) + dt * (frho - density(c));
    s.u = velocity(c) + dt * (fu - velocity(c)) * 1e-3;
    s.e = energy(c) + dt * (fe - energy(c));
    f += 3 + 4 + 3;
    check += s.rho;
  }
  for (int i = 0; i < n; ++i) set_state(m.cells[i], next[i].rho, next[i].u, next[i].e);
  *flops += f;
  return check;
}

}  // namespace

int main(int argc, char **argv) {
  long n = argc > 1 ? std::strtol(argv[1], nullptr, 0) : 20000;
  long steps = argc > 2 ? std::strtol(argv[2], nullptr, 0) : 20;
  if (n < 3 || steps < 1) {
    std::fprintf(stderr, "usage: smallfn [CELLS>=3] [STEPS>=1]\n");
    return 2;
  }
  Mesh m;
  m.mats.push_back(std::make_unique<IdealGas>(1.4));
  m.mats.push_back(std::make_unique<Stiffened>(4.4, 0.1));
  m.cells.resize(size_t(n));
  unsigned seed = 12345;
  for (long i = 0; i < n; ++i) {
    seed = seed * 1103515245u + 12345u;
    Cell &c = m.cells[size_t(i)];
    c.s = {1.0 + 0.1 * double(i % 7), 0.01 * double(i % 5), 2.5 + 0.01 * double(i % 11), 0};
    c.mat = int((seed >> 16) & 1);
    // Neighbours: mostly adjacent, one in eight a little further away.
    long jump = (seed >> 20) % 8 == 0 ? long((seed >> 8) % 64) : 1;
    c.left = int((i - jump + n) % n);
    c.right = int((i + jump) % n);
  }
  std::vector<State> next(static_cast<size_t>(n));
  double flops = 0, check = 0;
  double t0 = now_s(), c0 = cpu_s();
  for (long k = 0; k < steps; ++k) check += kernel_smallfn(m, next, 1e-3, &flops);
  double t = now_s() - t0, c = cpu_s() - c0;
  std::printf(
      "kernel=smallfn n=%ld reps=%ld flops=%.0f bytes=0 time_s=%.6f gflops=%.4f check=%.6e "
      "cpu_s=%.6f\n",
      n, steps, flops, t, t > 0 ? flops / t * 1e-9 : 0.0, check, c);
  return 0;
}
