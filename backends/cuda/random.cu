// Counter-based random numbers on the GPU, the same numbers as on the CPU.
//
// Philox 4x32-10 (backends/philox.h) is a pure function (seed, counter) -> four 32-bit words.
// Element i of `out` in row-major order uses the counter offset + i, whatever thread computes
// it, so a grid-stride loop with any grid gives the numbers that backends/cpu/random.cpp gives.
// The conversions from words to numbers are the CPU's, step by step:
//   Uniform [a, b):  float32 u = top 24 bits of w0; float64 u = top 53 bits of (w0, w1);
//                    a + u (b - a) in double, rounded to T, nudged below b should it reach b.
//   Normal (mean a, std b):  Box-Muller in double on (w0, w1) for float32, on (w0, w1) and
//                    (w2, w3) for float64: a + b sqrt(-2 ln(1 - u1)) cos(2 pi u2).
//   Integer [a, b):  a + ((w0 << 32 | w1) mod (b - a)).
// nvcc fuses a * b + c into one fused multiply-add, which rounds once where the CPU rounds
// twice; the sums below are written with __dmul_rn and __dadd_rn, which it may not fuse, so the
// arithmetic is the CPU's to the bit. Box-Muller's log and cos come from CUDA's math library,
// whose float64 results can differ from the C library's in the last bit: float64 normal
// samples may then differ from the CPU's by an ulp or two (float32 ones, rounded from double,
// almost never do).
// A draw recorded in a CUDA graph takes its seed and base offset from a cell in device memory
// (random_with_counters), read when the kernel runs, so that each replay draws fresh numbers.
// bfloat16 draws are the float32 draws rounded once, as on the CPU; a uniform one that rounding
// carries onto b takes the bfloat16 below it (philox::uniform_bfloat16).

#include <cstdint>
#include <type_traits>

#include "backends/compute_type.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/device_guard.h"
#include "backends/cuda/launch.cuh"
#include "backends/dtype_dispatch.h"
#include "backends/philox.h"
#include "backends/random_counters.h"

namespace normgrad::backend::cuda {

namespace {

template <typename T> __device__ __forceinline__ T next_toward(T from, T to) {
  if constexpr (sizeof(T) == 4)
    return nextafterf(from, to);
  else
    return ::nextafter(from, to);
}

// S is the stored type, T = compute_t<S> the one drawn (float32 for bfloat16).
template <typename S, typename T = compute_t<S>> struct UniformSample {
  double low, high, width;  // width = high - low
  __device__ S operator()(std::uint64_t seed, std::uint64_t counter) const {
    const philox::Words words = philox::random_words(seed, counter);
    const double u = std::is_same_v<T, float> ? philox::uniform_float(words.w[0])
                                              : philox::uniform_double(words.w[0], words.w[1]);
    T value = static_cast<T>(__dadd_rn(low, __dmul_rn(u, width)));
    const T typed_high = static_cast<T>(high);
    if (high > low && !(value < typed_high)) value = next_toward(typed_high, static_cast<T>(low));
    if constexpr (std::is_same_v<S, bfloat16>)
      return philox::uniform_bfloat16(value, low, high);
    else
      return value;
  }
};

template <typename S, typename T = compute_t<S>> struct NormalSample {
  double mean, deviation;
  __device__ S operator()(std::uint64_t seed, std::uint64_t counter) const {
    const philox::Words words = philox::random_words(seed, counter);
    double u1, u2;
    if constexpr (std::is_same_v<T, float>) {
      u1 = philox::uniform_float(words.w[0]);
      u2 = philox::uniform_float(words.w[1]);
    } else {
      u1 = philox::uniform_double(words.w[0], words.w[1]);
      u2 = philox::uniform_double(words.w[2], words.w[3]);
    }
    return static_cast<S>(
        static_cast<T>(__dadd_rn(mean, __dmul_rn(deviation, philox::box_muller(u1, u2)))));
  }
};

template <typename T> struct IntegerSample {
  std::int64_t low;
  std::uint64_t range;  // b - a, at least 1
  __device__ T operator()(std::uint64_t seed, std::uint64_t counter) const {
    const std::uint64_t bits = philox::random_bits64(philox::random_words(seed, counter));
    return static_cast<T>(
        static_cast<std::int64_t>(static_cast<std::uint64_t>(low) + bits % range));
  }
};

// Where a draw's seed and first counter come from: the launch's arguments, or a cell in device
// memory read when the kernel runs (a graph's replays set it), plus the offset.
struct Counters {
  std::uint64_t seed = 0;
  std::uint64_t offset = 0;
  const std::uint64_t* cell = nullptr;  // {seed, base offset}, or none
};

// out[element i] = sample(seed, offset + i), i the row-major index.
template <typename T, typename Sample>
__global__ void random_kernel(T* out, Indexer indexer, std::int64_t n, Counters counters,
                              Sample sample) {
  std::uint64_t seed = counters.seed;
  std::uint64_t offset = counters.offset;
  if (counters.cell != nullptr) {
    seed = counters.cell[0];
    offset += counters.cell[1];
  }
  NG_KERNEL_LOOP(i, n) {
    out[indexer.offset(i)] = sample(seed, offset + static_cast<std::uint64_t>(i));
  }
}

template <typename T, typename Sample>
void generate(const Context& context, const TensorRef& out, Counters counters, Sample sample) {
  const std::int64_t n = out.numel();
  if (n == 0) return;
  // make_indexers drops size-1 dims and merges contiguous ones but keeps the row-major order,
  // so the linear index of the kernel is the row-major index into out's shape.
  const TensorRef* const operands[1] = {&out};
  Indexer indexers[1];
  make_indexers(operands, indexers, "cuda random");
  random_kernel<<<grid_for(n, context), threads_per_block, 0, context.stream>>>(
      out.ptr<T>(), indexers[0], n, counters, sample);
  NG_CUDA_CHECK_LAUNCH();
}

void draw(const Context& context, const TensorRef& out, RandomKind kind, Counters counters,
          double alpha, double beta) {
  dispatch_storage(out.dtype, "cuda random", [&](auto tag) {
    using T = typename decltype(tag)::type;  // stored
    if (kind == RandomKind::Integer) {
      const auto low = static_cast<std::int64_t>(alpha);
      const auto high = static_cast<std::int64_t>(beta);
      const std::uint64_t range =
          high > low ? static_cast<std::uint64_t>(high) - static_cast<std::uint64_t>(low) : 1;
      generate<T>(context, out, counters, IntegerSample<T>{low, range});
    } else if constexpr (std::is_floating_point_v<compute_t<T>>) {
      if (kind == RandomKind::Uniform)
        generate<T>(context, out, counters, UniformSample<T>{alpha, beta, beta - alpha});
      else
        generate<T>(context, out, counters, NormalSample<T>{alpha, beta});
    } else {
      throw Error(
          detail::concat("cuda random: ", kind == RandomKind::Uniform ? "uniform" : "normal",
                         " samples need a float dtype, got ", out.dtype));
    }
  });
}

}  // namespace

void CudaBackend::random(const TensorRef& out, RandomKind kind, std::uint64_t seed,
                         std::uint64_t offset, double alpha, double beta) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  draw(context, out, kind, Counters{seed, offset}, alpha, beta);
}

void CudaBackend::random_with_counters(const TensorRef& out, RandomKind kind,
                                       const TensorRef& counters, std::uint64_t offset,
                                       double alpha, double beta) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  check_random_counters(counters, "cuda random");
  draw(context, out, kind, Counters{0, offset, counters.ptr<const std::uint64_t>()}, alpha, beta);
}

}  // namespace normgrad::backend::cuda
