#pragma once
// The eigendecomposition of a symmetric matrix, from the LAPACK inside OpenBLAS (ZCA
// whitening needs it).

namespace normgrad::backend::cpu {

// A = V diag(w) V^T for a symmetric n x n matrix A, stored column-major (for a symmetric
// matrix, row-major is the same). On return `matrix` holds the orthonormal eigenvectors as its
// columns (column-major: eigenvector j at matrix + j n) and `eigenvalues` (n values) the
// eigenvalues in ascending order. Only the lower triangle of A is read. Throws
// normgrad::Error if A has a value that is not finite, or if LAPACK reports a failure.
void symmetric_eigen(double* matrix, int n, double* eigenvalues);

}  // namespace normgrad::backend::cpu
