// A driver of Eigen's dense solvers (Eigen 3.4.0, fetched from Debian's eigen3 source
// package by bench/mix/lib.sh; not part of hpcscope): a product A A^T (Eigen's blocked
// GEMM), then, reps times, the Cholesky factorization (LLT) of that SPD matrix and the
// LU factorization with partial pivoting (PartialPivLU) of A, each solving one system.
// The floating-point work and the memory traffic are Eigen's templated C++.
//
//   eigen_solve N REPS    (N x N matrices of doubles)
//
// Prints the nominal FLOP count (2 N^3 for the product, N^3 / 3 for LLT and 2/3 N^3 for
// the LU per repetition, LAPACK Working Note 41's counts, lower-order terms left out) and
// checks the last solves: the scaled residual ||M x - b||_inf / (||M||_inf ||x||_inf N eps)
// of each must be below 16 (the threshold of LAPACK's own tests); exit 1 otherwise.
#include <Eigen/Dense>
#include <cfloat>
#include <cstdio>
#include <cstdlib>

int main(int argc, char **argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 400;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 3;
  if (n < 1 || reps < 1) {
    std::fprintf(stderr, "usage: eigen_solve N REPS (positive integers)\n");
    return 2;
  }
  std::srand(1);
  const Eigen::MatrixXd a = Eigen::MatrixXd::Random(n, n);
  const Eigen::MatrixXd spd =
      a * a.transpose() + double(n) * Eigen::MatrixXd::Identity(n, n);
  const Eigen::VectorXd b = Eigen::VectorXd::Ones(n);
  double check = 0;
  Eigen::VectorXd x_llt, x_lu;
  for (int r = 0; r < reps; r++) {
    const Eigen::LLT<Eigen::MatrixXd> llt(spd);
    const Eigen::PartialPivLU<Eigen::MatrixXd> lu(a);
    x_llt = llt.solve(b);
    x_lu = lu.solve(b);
    check += x_llt.sum() + x_lu.sum();
  }
  const auto resid = [&](const Eigen::MatrixXd &m, const Eigen::VectorXd &x) {
    return (m * x - b).lpNorm<Eigen::Infinity>() /
           (m.cwiseAbs().rowwise().sum().maxCoeff() * x.lpNorm<Eigen::Infinity>() * n *
            DBL_EPSILON);
  };
  const double r_llt = resid(spd, x_llt), r_lu = resid(a, x_lu);
  const bool ok = r_llt < 16.0 && r_lu < 16.0;
  const double dn = n;
  const double flops = 2 * dn * dn * dn + reps * (dn * dn * dn / 3 + 2 * dn * dn * dn / 3);
  std::printf("eigen_solve n=%d reps=%d check=%.6e nominal_flops=%.0f residual llt %.3f lu %.3f %s\n",
              n, reps, check, flops, r_llt, r_lu, ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
