// Householder QR through LAPACK: dgeqrf computes R and the Householder reflectors, dorgqr
// multiplies the reflectors out into Q. Both are called through their Fortran interface
// (column-major, arguments by pointer), which OpenBLAS exports.

#include "backends/cpu/lapack_qr.h"

#include <algorithm>
#include <vector>

#include "core/error.h"

extern "C" {
void dgeqrf_(const int* m, const int* n, double* a, const int* lda, double* tau, double* work,
             const int* lwork, int* info);
void dorgqr_(const int* m, const int* n, const int* k, double* a, const int* lda,
             const double* tau, double* work, const int* lwork, int* info);
}

namespace normgrad::backend::cpu {

void thin_qr(double* matrix, int m, int n, double* r_diagonal) {
  NG_CHECK(m >= n && n >= 1, "qr", "needs m >= n >= 1, got m = ", m, ", n = ", n);
  std::vector<double> tau(static_cast<std::size_t>(n));
  int info = 0;
  // A workspace query (lwork = -1) first, then the factorisation.
  double optimal = 0;
  const int query = -1;
  dgeqrf_(&m, &n, matrix, &m, tau.data(), &optimal, &query, &info);
  int lwork = std::max(n, static_cast<int>(optimal));
  std::vector<double> work(static_cast<std::size_t>(lwork));
  dgeqrf_(&m, &n, matrix, &m, tau.data(), work.data(), &lwork, &info);
  NG_CHECK(info == 0, "qr", "LAPACK dgeqrf failed with info = ", info);
  for (int j = 0; j < n; ++j) r_diagonal[j] = matrix[static_cast<std::size_t>(j) * m + j];

  dorgqr_(&m, &n, &n, matrix, &m, tau.data(), &optimal, &query, &info);
  lwork = std::max(n, static_cast<int>(optimal));
  work.resize(static_cast<std::size_t>(lwork));
  dorgqr_(&m, &n, &n, matrix, &m, tau.data(), work.data(), &lwork, &info);
  NG_CHECK(info == 0, "qr", "LAPACK dorgqr failed with info = ", info);
}

}  // namespace normgrad::backend::cpu
