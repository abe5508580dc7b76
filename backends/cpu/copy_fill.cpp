// Filling and copying: fill, arange and the strided copy with dtype conversion.
//
// All three run on the strided iteration of strided_loop.h; a copy between same-dtype
// operands whose rows are contiguous becomes one memcpy per row (one per thread range when
// both tensors are contiguous, since the layout then merges into a single row). A unit-stride
// row converted between bfloat16 and float32 runs a vectorised loop over the bits, which the
// bfloat16 operands' float32 working copies (bfloat16_widening.h) rely on.

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/row_kernel.h"
#include "backends/cpu/strided_loop.h"
#include "backends/dtype_dispatch.h"
#include "base/bfloat16.h"

namespace normgrad::backend::cpu {

void CpuBackend::fill(const TensorRef& out, double value) {
  dispatch_storage(out.dtype, "cpu fill", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T typed_value = static_cast<T>(value);
    for_each_element<1>({&out}, "cpu fill",
                        [&](const std::array<char*, 1>& pointers, const std::int64_t* strides,
                            std::int64_t count, std::int64_t) {
                          T* row = reinterpret_cast<T*>(pointers[0]);
                          if (strides[0] == 1) {
                            std::fill(row, row + count, typed_value);
                          } else {
                            for (std::int64_t i = 0; i < count; ++i)
                              row[i * strides[0]] = typed_value;
                          }
                        });
  });
}

// out[i] = start + i * step in row-major order, computed in double and converted once, so
// float32 and int64 outputs have no accumulated rounding.
void CpuBackend::arange(const TensorRef& out, double start, double step) {
  dispatch_storage(out.dtype, "cpu arange", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_each_element<1>(
        {&out}, "cpu arange",
        [&](const std::array<char*, 1>& pointers, const std::int64_t* strides, std::int64_t count,
            std::int64_t linear) {
          T* row = reinterpret_cast<T*>(pointers[0]);
          for (std::int64_t i = 0; i < count; ++i)
            row[i * strides[0]] = static_cast<T>(start + static_cast<double>(linear + i) * step);
        },
        /*keep_order=*/true);
  });
}

namespace {

// Unit-stride rows converted through the bits, compiled for AVX2 and baseline x86-64
// (row_kernel.h): baseline SSE2 has no instruction that packs 32-bit lanes into unsigned 16-bit
// ones, so rounding stays scalar there. Widening is exact: a bfloat16 is the top half of a
// float32. Rounding is to nearest, ties to even, as bfloat16's own conversion
// (bfloat16::round_bits, without a branch so that the loop vectorises).
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

constexpr std::int64_t transpose_tile = 32;

// A copy where dst is contiguous along its innermost dim but src along another dim (the
// `contiguous()` of a transposed view): walking dst in order would read src one cache line
// per element. Instead the plane of those two dims is copied in 32 x 32 tiles, whose source
// lines stay in L1 while the tile is written. Returns false when the layout is not of this kind.
template <typename Dst, typename Src>
bool copy_in_tiles(const StridedLayout<2>& layout, char* dst, char* src) {
  if (layout.rank < 2 || layout.inner_strides[0] != 1 || layout.inner_strides[1] == 1) return false;
  const int inner = layout.rank - 1;
  int across = -1;  // the dim along which src is contiguous
  for (int d = 0; d < inner; ++d)
    if (layout.byte_strides[d][1] == static_cast<std::int64_t>(sizeof(Src))) across = d;
  if (across < 0 || layout.sizes[inner] < transpose_tile || layout.sizes[across] < transpose_tile)
    return false;
  StridedLayout<2> batch;  // every other dim
  for (int d = 0; d < inner; ++d) {
    if (d == across) continue;
    batch.sizes[batch.rank] = layout.sizes[d];
    batch.byte_strides[batch.rank][0] = layout.byte_strides[d][0];
    batch.byte_strides[batch.rank][1] = layout.byte_strides[d][1];
    batch.numel *= layout.sizes[d];
    ++batch.rank;
  }
  const std::int64_t rows = layout.sizes[across], cols = layout.sizes[inner];
  const std::int64_t dst_row_stride = layout.byte_strides[across][0] / std::int64_t{sizeof(Dst)};
  const std::int64_t src_col_stride = layout.inner_strides[1];
  const std::int64_t row_tiles = (rows + transpose_tile - 1) / transpose_tile;
  const std::int64_t col_tiles = (cols + transpose_tile - 1) / transpose_tile;
  const std::int64_t tiles = row_tiles * col_tiles;
  parallel_for(batch.numel * tiles, transpose_tile * transpose_tile,
               [&](std::int64_t begin, std::int64_t end) {
                 for (std::int64_t task = begin; task < end; ++task) {
                   const auto offsets = offsets_of(batch, task / tiles);
                   const std::int64_t row0 = task % tiles / col_tiles * transpose_tile;
                   const std::int64_t col0 = task % col_tiles * transpose_tile;
                   Dst* out = reinterpret_cast<Dst*>(dst + offsets[0]);
                   const Src* in = reinterpret_cast<const Src*>(src + offsets[1]);
                   const std::int64_t row_end = std::min(row0 + transpose_tile, rows);
                   const std::int64_t col_end = std::min(col0 + transpose_tile, cols);
                   for (std::int64_t r = row0; r < row_end; ++r)
                     for (std::int64_t c = col0; c < col_end; ++c)
                       out[r * dst_row_stride + c] = static_cast<Dst>(in[r + c * src_col_stride]);
                 }
               });
  return true;
}

template <typename Dst, typename Src> void copy_typed(const TensorRef& dst, const TensorRef& src) {
  const auto layout = make_layout<2>(dst.shape.data(), static_cast<int>(dst.rank()),
                                     {operand(dst), operand(src)}, "cpu copy");
  char* dst_data = static_cast<char*>(dst.data);
  char* src_data = static_cast<char*>(src.data);
  if (layout.numel == 0 || copy_in_tiles<Dst, Src>(layout, dst_data, src_data)) return;
  run_layout(layout, {dst_data, src_data},
             [](const std::array<char*, 2>& pointers, const std::int64_t* strides,
                std::int64_t count, std::int64_t) {
               const bool unit = strides[0] == 1 && strides[1] == 1;
               if constexpr (std::is_same_v<Dst, Src>) {
                 if (unit) {
                   std::memcpy(pointers[0], pointers[1], count * sizeof(Dst));
                   return;
                 }
               } else if constexpr (std::is_same_v<Dst, bfloat16> && std::is_same_v<Src, float>) {
                 if (unit)
                   return round_row(reinterpret_cast<const float*>(pointers[1]), count,
                                    reinterpret_cast<bfloat16*>(pointers[0]));
               } else if constexpr (std::is_same_v<Dst, float> && std::is_same_v<Src, bfloat16>) {
                 if (unit)
                   return widen_row(reinterpret_cast<const bfloat16*>(pointers[1]), count,
                                    reinterpret_cast<float*>(pointers[0]));
               }
               unary_row<Dst, Src>(pointers[0], pointers[1], strides[0], strides[1], count,
                                   [](Src x) { return static_cast<Dst>(x); });
             });
}

}  // namespace

void CpuBackend::copy(const TensorRef& dst, const TensorRef& src) {
  dispatch_storage(dst.dtype, "cpu copy", [&](auto dst_tag) {
    dispatch_storage(src.dtype, "cpu copy", [&](auto src_tag) {
      copy_typed<typename decltype(dst_tag)::type, typename decltype(src_tag)::type>(dst, src);
    });
  });
}

}  // namespace normgrad::backend::cpu
