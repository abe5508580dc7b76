#pragma once
// The main() shared by the benchmark programs. It applies one thread count to everything that
// runs (normgrad's OpenMP loops, OpenBLAS, and the baselines' own OpenMP loops) before any
// benchmark starts, and records that count in the report's context, so that a result file says
// how it was measured. The count follows OMP_NUM_THREADS, as the library does.

#include <benchmark/benchmark.h>

#include <string>

#include <normgrad/normgrad.h>

namespace normgrad::bench {

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
