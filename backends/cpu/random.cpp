// Counter-based random numbers: element i of `out` (row-major) is a function of
// (seed, offset + i) only, through Philox 4x32-10 (backends/philox.h), so the numbers do not
// depend on the thread count, the memory layout of `out`, or the device.
//
// From the four words w0..w3 of element i:
//   Uniform [a, b):  float32 u = top 24 bits of w0; float64 u = top 53 bits of (w0, w1);
//                    a + u (b - a), nudged below b should rounding reach it.
//   Normal (mean a, std b):  Box-Muller on two uniforms (float32: w0 and w1; float64: (w0, w1)
//                    and (w2, w3)), evaluated in double: a + b sqrt(-2 ln(1 - u1)) cos(2 pi u2).
//   Integer [a, b):  a + ((w0 << 32 | w1) mod (b - a)). The modulo favours small remainders by
//                    at most (b - a) / 2^64, far below anything a test or a model can see.
// bfloat16 draws are the float32 draws rounded once; a uniform one that rounding carries onto
// b takes the bfloat16 below it (philox::uniform_bfloat16).

#include <cmath>

#include "backends/compute_type.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/simd/philox_avx2.h"
#include "backends/cpu/strided_loop.h"
#include "backends/dtype_dispatch.h"
#include "backends/philox.h"
#include "backends/random_counters.h"

namespace normgrad::backend::cpu {

namespace {

// A draw's work in adds (strided_loop.h): ten Philox rounds take one thread 3.3 ns a float32
// value, eight at a time with AVX2, where an add takes 0.42 (511488 values).
constexpr std::int64_t draw_cost = 8;

// Runs sample(counter) -> T for every element of out, with counter = offset + row-major index.
// A unit-stride row goes to whole_row(row, count, first counter) first, which may fill it at
// once (returning true) or leave it to sample.
template <typename T, typename Sample, typename WholeRow>
void generate(const TensorRef& out, std::uint64_t offset, Sample sample, WholeRow whole_row) {
  for_each_element<1>(
      {&out}, "cpu random",
      [&](const std::array<char*, 1>& pointers, const std::int64_t* strides, std::int64_t count,
          std::int64_t linear) {
        T* row = reinterpret_cast<T*>(pointers[0]);
        const std::uint64_t first = offset + static_cast<std::uint64_t>(linear);
        if (strides[0] == 1 && whole_row(row, count, first)) return;
        for (std::int64_t i = 0; i < count; ++i)
          row[i * strides[0]] = sample(first + static_cast<std::uint64_t>(i));
      },
      /*keep_order=*/true, draw_cost);
}

template <typename T, typename Sample>
void generate(const TensorRef& out, std::uint64_t offset, Sample sample) {
  generate<T>(out, offset, sample, [](T*, std::int64_t, std::uint64_t) { return false; });
}

// a + u (b - a) for u in [0, 1), kept inside [a, b) after rounding to T.
template <typename T> T scale_uniform(double u, double low, double high) {
  T value = static_cast<T>(low + u * (high - low));
  const T typed_high = static_cast<T>(high);
  if (high > low && !(value < typed_high)) value = std::nextafter(typed_high, static_cast<T>(low));
  return value;
}

// S is the stored type; bfloat16 draws float32 and rounds.
template <typename S>
void random_floating(const TensorRef& out, RandomKind kind, std::uint64_t seed,
                     std::uint64_t offset, double alpha, double beta) {
  using T = compute_t<S>;
  if (kind == RandomKind::Uniform) {
    const auto sample = [=](std::uint64_t counter) {
      const philox::Words words = philox::random_words(seed, counter);
      const double u = std::is_same_v<T, float> ? philox::uniform_float(words.w[0])
                                                : philox::uniform_double(words.w[0], words.w[1]);
      if constexpr (std::is_same_v<S, bfloat16>)
        return philox::uniform_bfloat16(scale_uniform<float>(u, alpha, beta), alpha, beta);
      else
        return scale_uniform<T>(u, alpha, beta);
    };
    if constexpr (std::is_same_v<S, float>) {
      // Float32 rows eight counters at a time where the CPU has AVX2 (dropout's draws), equal
      // bit for bit to sample's values.
      generate<T>(out, offset, sample, [=](float* row, std::int64_t count, std::uint64_t first) {
        return uniform_floats_avx2(row, count, seed, first, alpha, beta);
      });
    } else {
      generate<S>(out, offset, sample);
    }
  } else {
    generate<S>(out, offset, [=](std::uint64_t counter) {
      const philox::Words words = philox::random_words(seed, counter);
      double u1, u2;
      if constexpr (std::is_same_v<T, float>) {
        u1 = philox::uniform_float(words.w[0]);
        u2 = philox::uniform_float(words.w[1]);
      } else {
        u1 = philox::uniform_double(words.w[0], words.w[1]);
        u2 = philox::uniform_double(words.w[2], words.w[3]);
      }
      return static_cast<S>(static_cast<T>(alpha + beta * philox::box_muller(u1, u2)));
    });
  }
}

template <typename T>
void random_integer(const TensorRef& out, std::uint64_t seed, std::uint64_t offset, double alpha,
                    double beta) {
  const auto low = static_cast<std::int64_t>(alpha);
  const auto high = static_cast<std::int64_t>(beta);
  const std::uint64_t range =
      high > low ? static_cast<std::uint64_t>(high) - static_cast<std::uint64_t>(low) : 1;
  generate<T>(out, offset, [=](std::uint64_t counter) {
    const std::uint64_t bits = philox::random_bits64(philox::random_words(seed, counter));
    return static_cast<T>(
        static_cast<std::int64_t>(static_cast<std::uint64_t>(low) + bits % range));
  });
}

}  // namespace

void CpuBackend::random(const TensorRef& out, RandomKind kind, std::uint64_t seed,
                        std::uint64_t offset, double alpha, double beta) {
  dispatch_storage(out.dtype, "cpu random", [&](auto tag) {
    using S = typename decltype(tag)::type;
    if (kind == RandomKind::Integer) {
      random_integer<S>(out, seed, offset, alpha, beta);
    } else if constexpr (std::is_floating_point_v<compute_t<S>>) {
      random_floating<S>(out, kind, seed, offset, alpha, beta);
    } else {
      throw Error(detail::concat("cpu random: ", kind == RandomKind::Uniform ? "uniform" : "normal",
                                 " samples need a float dtype, got ", out.dtype));
    }
  });
}

// The CPU runs a draw when it is queued, so the counters are read now.
void CpuBackend::random_with_counters(const TensorRef& out, RandomKind kind,
                                      const TensorRef& counters, std::uint64_t offset, double alpha,
                                      double beta) {
  check_random_counters(counters, "cpu random");
  const auto* cell = counters.ptr<const std::int64_t>();
  random(out, kind, static_cast<std::uint64_t>(cell[0]),
         static_cast<std::uint64_t>(cell[1]) + offset, alpha, beta);
}

}  // namespace normgrad::backend::cpu
