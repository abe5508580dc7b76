#pragma once
// float32 matrix products with AVX2 and FMA, for x86-64 CPUs without AVX-512: C = A B (+ C),
// C row-major.
//
// Why a GEMM of our own: OpenBLAS computes a product on one thread only here (matmul.cpp's
// blocked_blas_gemm says why), so C is cut into blocks of 128 columns, one BLAS call each,
// and every call packs all of A again: a [774, 512] x [512, 32000] product packs A 250
// times. The loops of sgemm_packed.h pack A once and share C among the threads themselves.
// This file adds a 6 x 16 micro-kernel and the packing of B with AVX2.

#include <cstdint>

#include "backends/cpu/gemm/sgemm_packed.h"

namespace normgrad::backend::cpu {

// The AVX2 GEMM on x86-64 CPUs (and operating systems) with AVX2 and FMA; null elsewhere, or
// when NORMGRAD_CPU_AVX2_GEMM=0 is set in the environment. Checked once.
const SimdGemm* avx2_gemm();

}  // namespace normgrad::backend::cpu
