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
// The loops are those of sgemm_packed.h; this file adds a 12 x 32 micro-kernel and the packing
// of B with AVX-512.
//
// On the test machine (Zen 5), one thread: 120-200 GFLOP/s on the CIFAR model's convolution
// GEMMs, where OpenBLAS's kernels give 90-110.

#include <cstdint>

#include "backends/cpu/gemm/sgemm_packed.h"

namespace normgrad::backend::cpu {

// The AVX-512 GEMM on x86-64 CPUs (and operating systems) with AVX-512F; null elsewhere, or
// when NORMGRAD_CPU_AVX512_GEMM=0 is set in the environment. Checked once.
const SimdGemm* avx512_gemm();

}  // namespace normgrad::backend::cpu
