#pragma once
// float32 matrix products with AVX-512, for CPUs that have it: C = A B (+ C), C row-major.
//
// Why a GEMM of our own: OpenBLAS picks its kernels by CPU model when it loads, and releases
// that do not know a CPU fall back to an older kernel. OpenBLAS 0.3.21 (Debian 12) runs its
// AVX2 "Haswell" kernels on AMD Zen 4 and Zen 5, which have AVX-512: half the width, and on
// the test machine (Zen 5, 2 cores) about half the speed, of its own AVX-512 kernels, which it
// uses when told the CPU's kind (OPENBLAS_CORETYPE=SkylakeX). The layers of a CNN are large
// GEMMs, so that factor of two is most of a training step.
//
// The algorithm is the one of Goto and van de Geijn ("Anatomy of high-performance matrix
// multiplication", 2008), as BLIS structures it. A is copied ("packed") once into slivers of
// kernel_rows rows, each contiguous for a slice of kc terms of the inner dimension. C is cut
// into panels of nc columns; for each slice of kc terms the slice of B is packed into slivers
// of kernel_cols columns, and the micro-kernel multiplies one sliver of A by one sliver of B
// into a kernel_rows x kernel_cols tile of C held in registers. The B sliver (32 KiB) stays in
// the L1 cache while the micro-kernel runs through a block of mc rows of A, which stays in L2;
// packing makes every operand layout (row-major, transposed, any strides) look the same to
// the micro-kernel, and pads the edges with zeros.
//
// On the test machine (Zen 5), one thread: 120-200 GFLOP/s on the CIFAR model's convolution
// GEMMs, where OpenBLAS's kernels give 90-110.
//
// Threads share C's columns (or its rows, when it has few columns) in units of whole tiles,
// taken as they come; every element of C is computed by one thread, its terms summed in the
// same order whoever computes it, so results do not depend on the thread count.

#include <cstdint>

namespace normgrad::backend::cpu {

// Element (i, j) of a matrix operand is data[i * row_stride + j * col_stride].
struct StridedMatrix {
  const float* data;
  std::int64_t row_stride, col_stride;
};

// True on x86-64 CPUs (and operating systems) with AVX-512F, unless NORMGRAD_CPU_AVX512_GEMM=0
// is set in the environment (then OpenBLAS does every product: for comparisons and
// debugging); checked once.
bool avx512_gemm_available();

// Whether gemm_avx512 is worth calling for an m x n x k product: large enough to amortise the
// packing, at least one tile high and wide, and with an A of at most 4 Mi values (packed
// whole into a buffer that is kept).
bool avx512_gemm_suits(std::int64_t m, std::int64_t n, std::int64_t k);

// c (m x n, row i at c + i ldc) = a (m x k) b (k x n), added to c with accumulate. Only where
// avx512_gemm_available().
void gemm_avx512(std::int64_t m, std::int64_t n, std::int64_t k, StridedMatrix a, StridedMatrix b,
                 float* c, std::int64_t ldc, bool accumulate);

}  // namespace normgrad::backend::cpu
