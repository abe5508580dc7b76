#pragma once
// conv2d (backend.h) as im2col and GEMMs, with any backend's own kernels. With K = C kh kw taps
// and L = OH OW outputs, the columns X[n] = im2col(x[n]) are [K, L] and the weight is W
// [O, K]. A chunk of samples n0 .. n0 + m lays its columns side by side, X = [X[n0] ..
// X[n0 + m - 1]] ([K, m L]), so that the chunk is one GEMM, Y = W X ([O, m L]), rather than m
// thin ones; Y is then copied into y ([m, O, L]), the bias added on the way. The columns are
// kh kw times the size of the chunk's images, so a chunk holds at most a budget of them.
//
// The weight gradient is dW = sum over n of dY[n] X[n]^T, dY[n] = dy[n] as [O, L]: a chunk's
// rows of dy side by side ([O, m L], a copy) times its columns transposed, one accumulating
// GEMM a chunk, chunks in order.
//
// bfloat16 (CUDA's): the columns are bfloat16 and the GEMMs keep their float32 sums (backend.h's
// matmul with a float32 out), so the bias is added in float32 and y rounded once, and the weight
// gradient is summed over the chunks in float32 and rounded into dw once.
//
// These are the convolution of the CUDA backend, and of the CPU's for float64 and for CPUs
// without AVX2, whose float32 convolution packs the columns into its GEMMs without writing
// them out (cpu/sgemm_conv.h); the tests hold that one against these.

#include <cstdint>

#include "backends/backend.h"

namespace normgrad::backend {

// Samples a chunk: as many as keep the chunk's columns (`taps` rows, `positions` outputs a
// sample) within 8 Mi values (32 MiB in float32), at least 1 and at most `batch`.
std::int64_t conv_chunk_samples(std::int64_t taps, std::int64_t positions, std::int64_t batch);

void conv2d_by_columns(Backend& backend, const TensorRef& y, const TensorRef& x,
                       const TensorRef& weight, const TensorRef* bias, const Window2d& window);

void conv2d_weight_gradient_by_columns(Backend& backend, const TensorRef& dw, const TensorRef& x,
                                       const TensorRef& dy, const Window2d& window);

}  // namespace normgrad::backend
