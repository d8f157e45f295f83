// A driver of Eigen's dense solvers (Eigen 3.4.0, fetched from Debian's eigen3 source
// package by bench/mix/lib.sh; not part of hpcscope): a product A A^T (Eigen's blocked
// GEMM), then, reps times, the Cholesky factorization (LLT) of that SPD matrix and the
// LU factorization with partial pivoting (PartialPivLU) of A, each solving one system.
// The floating-point work and the memory traffic are Eigen's templated C++.
//
//   eigen_solve N REPS    (N x N matrices of doubles)
#include <Eigen/Dense>
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
  for (int r = 0; r < reps; r++) {
    const Eigen::LLT<Eigen::MatrixXd> llt(spd);
    const Eigen::PartialPivLU<Eigen::MatrixXd> lu(a);
    check += llt.solve(b).sum() + lu.solve(b).sum();
  }
  std::printf("eigen_solve n=%d reps=%d check=%.6e\n", n, reps, check);
  return 0;
}
