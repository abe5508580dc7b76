#pragma once
// What the benchmark programs share: a main() that applies one thread count to everything that
// runs (normgrad's OpenMP loops, OpenBLAS, and the baselines' own OpenMP loops) before any
// benchmark starts and records it in the report's context, the raw buffers the baselines
// work on, and the memory-bandwidth ceilings that every memory-bound program measures in its
// own run. The thread count follows OMP_NUM_THREADS, as the library does.

#include <benchmark/benchmark.h>
#include <normgrad/normgrad.h>
#include <omp.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <utility>

namespace normgrad::bench {

struct FreeDeleter {
  void operator()(float* data) const { std::free(data); }
};
using Buffer = std::unique_ptr<float[], FreeDeleter>;

// An uninitialised buffer of `count` floats, 64-byte aligned like normgrad's own allocations.
inline Buffer aligned_buffer(std::int64_t count) {
  const std::size_t bytes = (static_cast<std::size_t>(count) * sizeof(float) + 63) / 64 * 64;
  Buffer buffer(static_cast<float*>(std::aligned_alloc(64, bytes)));
  if (!buffer) throw std::bad_alloc();
  return buffer;
}

// A buffer of `count` floats, written once (by every thread) so its pages are resident.
inline Buffer touched_buffer(std::int64_t count, float value) {
  Buffer buffer = aligned_buffer(count);
  float* data = buffer.get();
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < count; ++i) data[i] = value;
  return buffer;
}

inline void set_bytes(benchmark::State& state, std::int64_t bytes_per_iteration) {
  state.SetBytesProcessed(state.iterations() * bytes_per_iteration);
}

// ---- memory-bandwidth ceilings ----------------------------------------------------------------
// On 64 MiB buffers, twice the last-level cache of the machine this was written on, so each
// streams from memory. Bytes counted as read plus written:
//   memcpy            std::memcpy of 64 MiB into a buffer allocated once: 2 x 64 MiB per copy;
//   memcpy_2_threads  the same copy split in two halves over the OpenMP threads;
//   triad             a[i] = b[i] + s c[i] over 16M floats with OpenMP: 3 x 64 MiB, the
//                     STREAM kernel.

constexpr std::int64_t ceiling_elements = 4096 * 4096;  // 16M floats, 64 MiB
constexpr std::int64_t ceiling_bytes = ceiling_elements * static_cast<std::int64_t>(sizeof(float));

inline void memcpy_one_thread(benchmark::State& state) {
  const Buffer source = touched_buffer(ceiling_elements, 1.0f),
               destination = touched_buffer(ceiling_elements, 0.0f);
  for (auto _ : state) {
    std::memcpy(destination.get(), source.get(), ceiling_bytes);
    benchmark::DoNotOptimize(destination.get());
    benchmark::ClobberMemory();
  }
  set_bytes(state, 2 * ceiling_bytes);
}

inline void memcpy_two_threads(benchmark::State& state) {
  const Buffer source = touched_buffer(ceiling_elements, 1.0f),
               destination = touched_buffer(ceiling_elements, 0.0f);
  for (auto _ : state) {
#pragma omp parallel
    {
      const std::int64_t team = omp_get_num_threads(), thread = omp_get_thread_num();
      const std::int64_t begin = ceiling_elements * thread / team / 16 * 16;
      const std::int64_t end =
          thread + 1 == team ? ceiling_elements : ceiling_elements * (thread + 1) / team / 16 * 16;
      std::memcpy(destination.get() + begin, source.get() + begin,
                  static_cast<std::size_t>(end - begin) * sizeof(float));
    }
    benchmark::DoNotOptimize(destination.get());
    benchmark::ClobberMemory();
  }
  set_bytes(state, 2 * ceiling_bytes);
}

inline void triad(benchmark::State& state) {
  const Buffer a = touched_buffer(ceiling_elements, 0.0f),
               b = touched_buffer(ceiling_elements, 1.0f),
               c = touched_buffer(ceiling_elements, 2.0f);
  float* out = a.get();
  const float* x = b.get();
  const float* y = c.get();
  const float scale = 3.0f;
  for (auto _ : state) {
#pragma omp parallel for simd schedule(static)
    for (std::int64_t i = 0; i < ceiling_elements; ++i) out[i] = x[i] + scale * y[i];
    benchmark::DoNotOptimize(out);
    benchmark::ClobberMemory();
  }
  set_bytes(state, 3 * ceiling_bytes);
}

// Registers the three ceilings as memcpy/64MiB, memcpy_2_threads/64MiB and triad/16M, the
// names bench/run_benchmarks.py looks for.
inline void register_bandwidth_ceilings() {
  for (const auto& [name, function] :
       {std::pair{"memcpy/64MiB", &memcpy_one_thread},
        std::pair{"memcpy_2_threads/64MiB", &memcpy_two_threads}, std::pair{"triad/16M", &triad}})
    benchmark::RegisterBenchmark(name, function)->UseRealTime()->Unit(benchmark::kMillisecond);
}

inline int run_benchmark_main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const int threads = get_num_threads();
  set_num_threads(threads);
  benchmark::AddCustomContext("normgrad_threads", std::to_string(threads));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace normgrad::bench
