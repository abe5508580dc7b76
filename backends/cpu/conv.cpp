// conv2d and its weight gradient: in float32 on CPUs with AVX2 or AVX-512, the GEMMs of
// sgemm_conv.h, which pack im2col's columns into the product without writing them out;
// otherwise (float64, other CPUs, or NORMGRAD_CPU_AVX2_GEMM=0 and NORMGRAD_CPU_AVX512_GEMM=0
// in the environment) im2col and GEMMs over chunks of samples (conv_by_columns.h).

#include "backends/bfloat16_widening.h"
#include "backends/conv_by_columns.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/gemm/sgemm_avx2.h"
#include "backends/cpu/gemm/sgemm_avx512.h"

namespace normgrad::backend::cpu {

namespace {

const SimdGemm* simd_gemm() {
  static const SimdGemm* const simd = avx512_gemm() != nullptr ? avx512_gemm() : avx2_gemm();
  return simd;
}

}  // namespace

void CpuBackend::conv2d(const TensorRef& y, const TensorRef& x, const TensorRef& weight,
                        const TensorRef* bias, const Window2d& window) {
  if (any_bfloat16({&y, &x, &weight, bias})) {
    Float32Copies f(*this);
    conv2d(f.output(y), f.input(x), f.input(weight), f.input(bias), window);
    return f.finish();
  }
  const SimdGemm* simd = simd_gemm();
  if (y.dtype != DType::Float32 || simd == nullptr) {
    conv2d_by_columns(*this, y, x, weight, bias, window);
    return;
  }
  simd->conv(ConvProblem{x.ptr<float>(), x.shape[0], x.shape[1], x.shape[2], x.shape[3],
                         weight.ptr<float>(), bias != nullptr ? bias->ptr<float>() : nullptr,
                         weight.shape[0], y.ptr<float>(), y.shape[2], y.shape[3], window});
}

void CpuBackend::conv2d_weight_gradient(const TensorRef& dw, const TensorRef& x,
                                        const TensorRef& dy, const Window2d& window) {
  if (any_bfloat16({&dw, &x, &dy})) {
    Float32Copies f(*this);
    conv2d_weight_gradient(f.output(dw), f.input(x), f.input(dy), window);
    return f.finish();
  }
  const SimdGemm* simd = simd_gemm();
  if (dw.dtype != DType::Float32 || simd == nullptr) {
    conv2d_weight_gradient_by_columns(*this, dw, x, dy, window);
    return;
  }
  simd->conv_weight_gradient(ConvWeightGradient{x.ptr<float>(), x.shape[0], x.shape[1], x.shape[2],
                                                x.shape[3], dy.ptr<float>(), dy.shape[1],
                                                dy.shape[2], dy.shape[3], dw.ptr<float>(), window});
}

}  // namespace normgrad::backend::cpu
