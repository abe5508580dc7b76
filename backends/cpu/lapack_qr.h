#pragma once
// The QR factorisation, from the LAPACK inside OpenBLAS (the orthogonal initialiser needs it).

namespace normgrad::backend::cpu {

// Thin QR of a column-major m x n matrix with m >= n, A = QR: on return `matrix` holds the
// n orthonormal columns of Q, and r_diagonal (n values) the diagonal of R. Throws
// normgrad::Error if LAPACK reports a failure.
void thin_qr(double* matrix, int m, int n, double* r_diagonal);

}  // namespace normgrad::backend::cpu
