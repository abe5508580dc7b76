// The row conversions of bfloat16_rows.h.

#include "backends/cpu/bfloat16_rows.h"

#include "backends/cpu/row_kernel.h"

namespace normgrad::backend::cpu {

NORMGRAD_ROW_KERNEL void widen_row(const bfloat16* in, std::int64_t n, float* out) {
  const auto* bits = reinterpret_cast<const std::uint16_t*>(in);
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i)
    out[i] = std::bit_cast<float>(static_cast<std::uint32_t>(bits[i]) << 16);
}

NORMGRAD_ROW_KERNEL void round_row(const float* in, std::int64_t n, bfloat16* out) {
  auto* bits = reinterpret_cast<std::uint16_t*>(out);
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i)
    bits[i] = bfloat16::round_bits(std::bit_cast<std::uint32_t>(in[i]));
}

}  // namespace normgrad::backend::cpu
