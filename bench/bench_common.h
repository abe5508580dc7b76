#pragma once
// What the benchmark programs share: a main() that applies one thread count to everything that
// runs (normgrad's OpenMP loops, OpenBLAS, and the baselines' own OpenMP loops) before any
// benchmark starts and records it in the report's context, and the raw buffers the baselines
// work on. The thread count follows OMP_NUM_THREADS, as the library does.

#include <benchmark/benchmark.h>
#include <normgrad/normgrad.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>

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
