// The two factorisations through LAPACK's Fortran interface (column-major, arguments by
// pointer), which OpenBLAS exports.
//   thin_qr: Householder QR. dgeqrf computes R and the Householder reflectors, dorgqr
//     multiplies the reflectors out into Q.
//   symmetric_eigen: dsyevd, reduction to tridiagonal form, then divide and conquer,
//     eigenvectors included.

#include "backends/lapack.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "base/error.h"

extern "C" {
void dgeqrf_(const int* m, const int* n, double* a, const int* lda, double* tau, double* work,
             const int* lwork, int* info);
void dorgqr_(const int* m, const int* n, const int* k, double* a, const int* lda,
             const double* tau, double* work, const int* lwork, int* info);
void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w,
             double* work, const int* lwork, int* iwork, const int* liwork, int* info);
}

namespace normgrad::lapack {

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

void symmetric_eigen(double* matrix, int n, double* eigenvalues) {
  NG_CHECK(n >= 1, "symmetric_eigen", "needs n >= 1, got n = ", n);
  const std::size_t count = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  // LAPACK does not check: a NaN can make it loop long or return garbage.
  for (std::size_t i = 0; i < count; ++i)
    NG_CHECK(std::isfinite(matrix[i]), "symmetric_eigen", "the matrix holds ", matrix[i],
             " at row ", i % static_cast<std::size_t>(n), ", column ",
             i / static_cast<std::size_t>(n));
  const char jobz = 'V', uplo = 'L';
  int info = 0;
  // A workspace query (lwork = liwork = -1) first, then the decomposition.
  double optimal_work = 0;
  int optimal_iwork = 0;
  const int query = -1;
  dsyevd_(&jobz, &uplo, &n, matrix, &n, eigenvalues, &optimal_work, &query, &optimal_iwork, &query,
          &info);
  NG_CHECK(info == 0, "symmetric_eigen",
           "LAPACK dsyevd's workspace query failed with info = ", info);
  int lwork = std::max(1 + 6 * n + 2 * n * n, static_cast<int>(optimal_work));
  int liwork = std::max(3 + 5 * n, optimal_iwork);
  std::vector<double> work(static_cast<std::size_t>(lwork));
  std::vector<int> iwork(static_cast<std::size_t>(liwork));
  dsyevd_(&jobz, &uplo, &n, matrix, &n, eigenvalues, work.data(), &lwork, iwork.data(), &liwork,
          &info);
  NG_CHECK(info == 0, "symmetric_eigen", "LAPACK dsyevd failed with info = ", info,
           info > 0 ? " (the divide and conquer did not converge)" : "");
}

}  // namespace normgrad::lapack
