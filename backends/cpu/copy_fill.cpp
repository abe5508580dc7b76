// Filling and copying: fill, arange and the strided copy with dtype conversion.
//
// All three run on the strided iteration of strided_loop.h; a copy between same-dtype
// operands whose rows are contiguous becomes one memcpy per row (one per thread range when
// both tensors are contiguous, since the layout then merges into a single row).

#include <algorithm>
#include <cstring>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/dtype_dispatch.h"
#include "backends/cpu/strided_loop.h"

namespace normgrad::backend::cpu {

void CpuBackend::fill(const TensorRef& out, double value) {
  dispatch_any(out.dtype, "cpu fill", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T typed_value = static_cast<T>(value);
    for_each_element<1>({&out}, "cpu fill",
                        [&](const std::array<char*, 1>& pointers, const std::int64_t* strides,
                            std::int64_t count, std::int64_t) {
                          T* row = reinterpret_cast<T*>(pointers[0]);
                          if (strides[0] == 1) {
                            std::fill(row, row + count, typed_value);
                          } else {
                            for (std::int64_t i = 0; i < count; ++i) row[i * strides[0]] = typed_value;
                          }
                        });
  });
}

// out[i] = start + i * step in row-major order, computed in double and converted once, so
// float32 and int64 outputs have no accumulated rounding.
void CpuBackend::arange(const TensorRef& out, double start, double step) {
  dispatch_any(out.dtype, "cpu arange", [&](auto tag) {
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

template <typename Dst, typename Src>
void copy_typed(const TensorRef& dst, const TensorRef& src) {
  for_each_element<2>({&dst, &src}, "cpu copy",
                      [](const std::array<char*, 2>& pointers, const std::int64_t* strides,
                         std::int64_t count, std::int64_t) {
                        if constexpr (std::is_same_v<Dst, Src>) {
                          if (strides[0] == 1 && strides[1] == 1) {
                            std::memcpy(pointers[0], pointers[1], count * sizeof(Dst));
                            return;
                          }
                        }
                        unary_row<Dst, Src>(pointers[0], pointers[1], strides[0], strides[1],
                                            count, [](Src x) { return static_cast<Dst>(x); });
                      });
}

}  // namespace

void CpuBackend::copy(const TensorRef& dst, const TensorRef& src) {
  dispatch_any(dst.dtype, "cpu copy", [&](auto dst_tag) {
    dispatch_any(src.dtype, "cpu copy", [&](auto src_tag) {
      copy_typed<typename decltype(dst_tag)::type, typename decltype(src_tag)::type>(dst, src);
    });
  });
}

}  // namespace normgrad::backend::cpu
