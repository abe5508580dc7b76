// The 2x2, stride-2 max-pool (max_pool_2x2.h gives the contract and the order of candidates).

#include "backends/cpu/simd/max_pool_2x2.h"

#include <algorithm>
#include <limits>
#include <type_traits>

#if defined(__x86_64__)
#include <emmintrin.h>  // SSE2, part of every x86-64 CPU
#endif

namespace normgrad::backend::cpu {

namespace {

// Outputs [first, out_w) of row oh, one block at a time.
template <typename T>
void max_row_scalar(const PlaneSize& size, const T* in, T* out, std::int64_t* indices,
                    std::int64_t oh, std::int64_t first) {
  const std::int64_t width = size.width, base = 2 * oh * width;
  const T* top = in + base;
  const T* bottom = top + width;
  for (std::int64_t ow = first; ow < size.out_w; ++ow) {
    T best = top[2 * ow];
    std::int64_t offset = 0;  // of the winner from the block's first pixel
    const auto challenge = [&](T value, std::int64_t value_offset) {
      const bool take = (value > best) | ((value != value) & (best == best));
      best = take ? value : best;
      offset = take ? value_offset : offset;
    };
    challenge(top[2 * ow + 1], 1);
    challenge(bottom[2 * ow], width);
    challenge(bottom[2 * ow + 1], width + 1);
    out[oh * size.out_w + ow] = best;
    indices[oh * size.out_w + ow] = base + 2 * ow + offset;
  }
}

#if defined(__x86_64__)
// Four blocks of row oh at a time; returns how many outputs it wrote (a multiple of 4). The
// even and odd columns of the two rows are de-interleaved into the four candidates a, b, c,
// d of four blocks, and each challenge is the scalar one as masks:
//   take = (v > best) | (v unordered & best ordered),  best = take ? v : best.
std::int64_t max_row_sse2(const PlaneSize& size, const float* in, float* out, std::int64_t* indices,
                          std::int64_t oh) {
  const std::int64_t width = size.width, base = 2 * oh * width;
  const float* top = in + base;
  const float* bottom = top + width;
  const std::int64_t blocks = size.out_w / 4 * 4;
  for (std::int64_t ow = 0; ow < blocks; ow += 4) {
    const __m128 top_left = _mm_loadu_ps(top + 2 * ow), top_right = _mm_loadu_ps(top + 2 * ow + 4);
    const __m128 bottom_left = _mm_loadu_ps(bottom + 2 * ow);
    const __m128 bottom_right = _mm_loadu_ps(bottom + 2 * ow + 4);
    __m128 best = _mm_shuffle_ps(top_left, top_right, _MM_SHUFFLE(2, 0, 2, 0));
    __m128i offset = _mm_setzero_si128();
    const auto challenge = [&](__m128 value, std::int32_t value_offset) {
      const __m128 take =
          _mm_or_ps(_mm_cmpgt_ps(value, best),
                    _mm_andnot_ps(_mm_cmpunord_ps(best, best), _mm_cmpunord_ps(value, value)));
      best = _mm_or_ps(_mm_and_ps(take, value), _mm_andnot_ps(take, best));
      const __m128i take_bits = _mm_castps_si128(take);
      offset = _mm_or_si128(_mm_and_si128(take_bits, _mm_set1_epi32(value_offset)),
                            _mm_andnot_si128(take_bits, offset));
    };
    challenge(_mm_shuffle_ps(top_left, top_right, _MM_SHUFFLE(3, 1, 3, 1)), 1);
    challenge(_mm_shuffle_ps(bottom_left, bottom_right, _MM_SHUFFLE(2, 0, 2, 0)),
              static_cast<std::int32_t>(width));
    challenge(_mm_shuffle_ps(bottom_left, bottom_right, _MM_SHUFFLE(3, 1, 3, 1)),
              static_cast<std::int32_t>(width + 1));
    _mm_storeu_ps(out + oh * size.out_w + ow, best);
    // index = base + 2 ow + offset, widened to int64 (offsets are non-negative).
    const __m128i zero = _mm_setzero_si128();
    const __m128i first = _mm_set_epi64x(base + 2 * ow + 2, base + 2 * ow);
    const __m128i next = _mm_add_epi64(first, _mm_set1_epi64x(4));
    auto* index = reinterpret_cast<__m128i*>(indices + oh * size.out_w + ow);
    _mm_storeu_si128(index, _mm_add_epi64(first, _mm_unpacklo_epi32(offset, zero)));
    _mm_storeu_si128(index + 1, _mm_add_epi64(next, _mm_unpackhi_epi32(offset, zero)));
  }
  return blocks;
}
#endif

#if defined(__x86_64__)
// Backward over four blocks of row oh at a time; returns how many outputs it wrote (a
// multiple of 4), or -1 at a group with an index outside its block. An offset (64 bits) is
// one of 0, 1, W, W + 1 exactly when its high half is 0 and its low half equals one of them.
// The blocks' four pixels a b / c d are then dy or 0, re-interleaved into the two rows.
std::int64_t backward_row_sse2(const PlaneSize& size, float* dx, const float* dy,
                               const std::int64_t* indices, std::int64_t oh) {
  const std::int64_t width = size.width, base = 2 * oh * width;
  float* top = dx + base;
  float* bottom = top + width;
  const std::int64_t blocks = size.out_w / 4 * 4;
  const __m128i zero = _mm_setzero_si128(), one = _mm_set1_epi32(1);
  const __m128i below = _mm_set1_epi32(static_cast<std::int32_t>(width));
  const __m128i below_right = _mm_set1_epi32(static_cast<std::int32_t>(width + 1));
  for (std::int64_t ow = 0; ow < blocks; ow += 4) {
    const std::int64_t o = oh * size.out_w + ow;
    const __m128i first = _mm_set_epi64x(base + 2 * ow + 2, base + 2 * ow);
    const auto* index = reinterpret_cast<const __m128i*>(indices + o);
    const __m128 offsets_01 = _mm_castsi128_ps(_mm_sub_epi64(_mm_loadu_si128(index), first));
    const __m128 offsets_23 = _mm_castsi128_ps(
        _mm_sub_epi64(_mm_loadu_si128(index + 1), _mm_add_epi64(first, _mm_set1_epi64x(4))));
    const __m128i low =
        _mm_castps_si128(_mm_shuffle_ps(offsets_01, offsets_23, _MM_SHUFFLE(2, 0, 2, 0)));
    const __m128i high =
        _mm_castps_si128(_mm_shuffle_ps(offsets_01, offsets_23, _MM_SHUFFLE(3, 1, 3, 1)));
    const __m128i at_a = _mm_cmpeq_epi32(low, zero), at_b = _mm_cmpeq_epi32(low, one);
    const __m128i at_c = _mm_cmpeq_epi32(low, below), at_d = _mm_cmpeq_epi32(low, below_right);
    const __m128i inside =
        _mm_and_si128(_mm_cmpeq_epi32(high, zero),
                      _mm_or_si128(_mm_or_si128(at_a, at_b), _mm_or_si128(at_c, at_d)));
    if (_mm_movemask_epi8(inside) != 0xFFFF) return -1;
    const __m128 grad = _mm_add_ps(_mm_setzero_ps(), _mm_loadu_ps(dy + o));  // 0 + dy
    const __m128 a = _mm_and_ps(_mm_castsi128_ps(at_a), grad);
    const __m128 b = _mm_and_ps(_mm_castsi128_ps(at_b), grad);
    const __m128 c = _mm_and_ps(_mm_castsi128_ps(at_c), grad);
    const __m128 d = _mm_and_ps(_mm_castsi128_ps(at_d), grad);
    _mm_storeu_ps(top + 2 * ow, _mm_unpacklo_ps(a, b));
    _mm_storeu_ps(top + 2 * ow + 4, _mm_unpackhi_ps(a, b));
    _mm_storeu_ps(bottom + 2 * ow, _mm_unpacklo_ps(c, d));
    _mm_storeu_ps(bottom + 2 * ow + 4, _mm_unpackhi_ps(c, d));
  }
  return blocks;
}
#endif

// Outputs [first, out_w) of row oh, then the odd last column of its two rows; false at an
// index outside its block.
template <typename T>
bool backward_row_scalar(const PlaneSize& size, T* dx, const T* dy, const std::int64_t* indices,
                         std::int64_t oh, std::int64_t first) {
  const std::int64_t width = size.width;
  T* top = dx + 2 * oh * width;
  T* bottom = top + width;
  for (std::int64_t ow = first; ow < size.out_w; ++ow) {
    const std::int64_t o = oh * size.out_w + ow;
    const std::int64_t offset = indices[o] - (2 * oh * width + 2 * ow);
    if (offset != 0 && offset != 1 && offset != width && offset != width + 1) return false;
    const T grad = T(0) + dy[o];  // the general path's 0 + dy: the same bits, -0 included
    top[2 * ow] = offset == 0 ? grad : T(0);
    top[2 * ow + 1] = offset == 1 ? grad : T(0);
    bottom[2 * ow] = offset == width ? grad : T(0);
    bottom[2 * ow + 1] = offset == width + 1 ? grad : T(0);
  }
  if (width % 2) top[width - 1] = bottom[width - 1] = T(0);
  return true;
}

template <typename T>
bool backward_plane(const PlaneSize& size, T* dx, const T* dy, const std::int64_t* indices) {
  for (std::int64_t oh = 0; oh < size.out_h; ++oh) {
    std::int64_t done = 0;
#if defined(__x86_64__)
    if constexpr (std::is_same_v<T, float>)
      if (size.width < std::numeric_limits<std::int32_t>::max()) {
        done = backward_row_sse2(size, dx, dy, indices, oh);
        if (done < 0) return false;
      }
#endif
    if (!backward_row_scalar(size, dx, dy, indices, oh, done)) return false;
  }
  const std::int64_t covered = 2 * size.out_h * size.width;
  std::fill(dx + covered, dx + size.height * size.width, T(0));  // an odd last row
  return true;
}

}  // namespace

bool is_max_pool_2x2(const Window2d& k) {
  return k.kernel_h == 2 && k.kernel_w == 2 && k.stride_h == 2 && k.stride_w == 2 &&
         k.padding_h == 0 && k.padding_w == 0 && k.dilation_h == 1 && k.dilation_w == 1;
}

void max_pool_2x2_plane(const PlaneSize& size, const float* in, float* out, std::int64_t* indices) {
  for (std::int64_t oh = 0; oh < size.out_h; ++oh) {
    std::int64_t done = 0;
#if defined(__x86_64__)
    // The vector path holds the offsets W and W + 1 in int32 lanes.
    if (size.width < std::numeric_limits<std::int32_t>::max())
      done = max_row_sse2(size, in, out, indices, oh);
#endif
    max_row_scalar(size, in, out, indices, oh, done);
  }
}

void max_pool_2x2_plane(const PlaneSize& size, const double* in, double* out,
                        std::int64_t* indices) {
  for (std::int64_t oh = 0; oh < size.out_h; ++oh) max_row_scalar(size, in, out, indices, oh, 0);
}

bool max_pool_2x2_backward_plane(const PlaneSize& size, float* dx, const float* dy,
                                 const std::int64_t* indices) {
  return backward_plane(size, dx, dy, indices);
}

bool max_pool_2x2_backward_plane(const PlaneSize& size, double* dx, const double* dy,
                                 const std::int64_t* indices) {
  return backward_plane(size, dx, dy, indices);
}

}  // namespace normgrad::backend::cpu
