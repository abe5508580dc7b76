#pragma once
// What the checks of bfloat16 ops and of mixed precision share (test_bfloat16.cpp, and the
// bfloat16 cases of the random, indexing and recurrent families): conversions to bfloat16 and
// float32, bit-for-bit equality of two bfloat16 tensors, bfloat16's unit roundoff, and
// mixed-precision parameter gradients held to float32 ones.
//
//   using namespace testing::bfloat16_checks;
//   CHECK(same_bits(exp(bf16(x)), bf16(exp(f32(bf16(x))))));

#include <cstddef>
#include <vector>

#include "helpers.h"

namespace testing::bfloat16_checks {

inline normgrad::Tensor bf16(const normgrad::Tensor& t) { return t.to(normgrad::DType::BFloat16); }
inline normgrad::Tensor f32(const normgrad::Tensor& t) { return t.to(normgrad::DType::Float32); }

// Bit-for-bit equality of two bfloat16 tensors.
inline bool same_bits(const normgrad::Tensor& a, const normgrad::Tensor& b) {
  if (a.dtype() != normgrad::DType::BFloat16 || b.dtype() != normgrad::DType::BFloat16 ||
      a.shape() != b.shape())
    return false;
  const std::vector<normgrad::bfloat16> x = a.to_vector<normgrad::bfloat16>(),
                                        y = b.to_vector<normgrad::bfloat16>();
  for (std::size_t i = 0; i < x.size(); ++i)
    if (x[i].bits != y[i].bits) return false;
  return true;
}

// bfloat16's unit roundoff: 8 significant bits, so rounding errs by at most 2^-8 of the value.
inline constexpr double unit = 0x1p-8;

// Mixed-precision parameter gradients against float32 ones: float32 themselves, and within
// `bound` of each tensor's largest.
inline void check_parameter_grads(const std::vector<normgrad::Tensor>& mixed,
                                  const std::vector<normgrad::Tensor>& exact, double bound) {
  REQUIRE(mixed.size() == exact.size());
  for (std::size_t i = 0; i < exact.size(); ++i) {
    CAPTURE(i);
    REQUIRE(mixed[i].defined());
    CHECK(mixed[i].dtype() == normgrad::DType::Float32);
    const double largest = exact[i].abs().max().item();
    const double error = (mixed[i] - exact[i]).abs().max().item();
    CAPTURE(error / largest);
    CHECK(error <= bound * largest);
  }
}

}  // namespace testing::bfloat16_checks
