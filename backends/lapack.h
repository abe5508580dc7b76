#pragma once
// Dense linear algebra on host memory, from the LAPACK inside OpenBLAS: the two
// factorisations that the library needs outside any tensor op. The orthogonal initialiser
// (nn/init.cpp) takes Q of a random matrix; ZCA whitening (data/zca.cpp) takes the
// eigenvectors of a covariance. Both run once, on small matrices, in float64.
//
// Matrices are column-major, as LAPACK's Fortran interface takes them.

namespace normgrad::lapack {

// Thin QR of an m x n matrix with m >= n, A = QR: on return `matrix` holds the n orthonormal
// columns of Q, and r_diagonal (n values) the diagonal of R. Throws normgrad::Error if LAPACK
// reports a failure.
void thin_qr(double* matrix, int m, int n, double* r_diagonal);

// A = V diag(w) V^T for a symmetric n x n matrix A (for a symmetric matrix, row-major is the
// same as column-major). On return `matrix` holds the orthonormal eigenvectors as its columns
// (eigenvector j at matrix + j n) and `eigenvalues` (n values) the eigenvalues in ascending
// order. Only the lower triangle of A is read. Throws normgrad::Error if A has a value that is
// not finite, or if LAPACK reports a failure.
void symmetric_eigen(double* matrix, int n, double* eigenvalues);

}  // namespace normgrad::lapack
