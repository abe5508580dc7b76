#pragma once
// conv2d (backend.h) as im2col and GEMMs, with any backend's own kernels. With K = C kh kw taps
// and L = OH OW outputs, the columns X[n] = im2col(x[n]) are [K, L] and the weight is W
// [O, K]. A chunk of samples n0 .. n0 + m lays its columns side by side, X = [X[n0] ..
// X[n0 + m - 1]] ([K, m L]), so that the chunk is one GEMM, Y = W X ([O, m L]), rather than m
// thin ones; Y is then copied into y ([m, O, L]), the bias added on the way. The columns are
// kh kw times the size of the chunk's images, so a chunk holds at most a budget of them.
//
// It is the convolution of the CUDA backend, and of the CPU's for float64 and for CPUs
// without AVX2, whose float32 convolution packs the columns into its GEMM without writing
// them out (cpu/sgemm_conv.h); the tests hold that one against this one.

#include "backends/backend.h"

namespace normgrad::backend {

void conv2d_by_columns(Backend& backend, const TensorRef& y, const TensorRef& x,
                       const TensorRef& weight, const TensorRef* bias, const Window2d& window);

}  // namespace normgrad::backend
