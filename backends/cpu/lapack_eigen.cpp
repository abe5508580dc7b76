// The symmetric eigendecomposition through LAPACK's dsyevd: reduction to tridiagonal form,
// then divide and conquer, eigenvectors included. Called through its Fortran interface
// (column-major, arguments by pointer), which OpenBLAS exports.

#include "backends/cpu/lapack_eigen.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "core/error.h"

extern "C" {
void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w,
             double* work, const int* lwork, int* iwork, const int* liwork, int* info);
}

namespace normgrad::backend::cpu {

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

}  // namespace normgrad::backend::cpu
