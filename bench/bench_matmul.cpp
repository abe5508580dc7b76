// Square float32 matrix products: what normgrad::matmul costs on top of the GEMM it calls.
//
// Each size is also timed as a bare cblas_sgemm (OpenBLAS) on buffers allocated once, in the
// same run and with the same thread count: the baseline. On x86-64 with AVX2 or AVX-512,
// normgrad computes large float32 products with a GEMM of its own (backends/cpu/sgemm_*), so
// the difference is that GEMM against OpenBLAS's plus normgrad's own cost: argument checks,
// the output allocation (inside the timed loop, since a user pays it on every call) and the
// layout decision. Elsewhere matmul calls OpenBLAS too, and the difference is the latter alone.
// Throughput is 2 n^3 flops per product, reported as a rate ("flops", per second of wall time).
//
// The transposed case, matmul(a.t(), b), must reach the GEMM as a transpose flag on a's
// storage, with no copy: it is timed beside cblas_sgemm with CblasTrans and beside
// matmul(a.t().contiguous(), b), which does copy, to show what a copy would have cost.
// Google Benchmark's sizing runs serve as warm-up; wall time is used because GEMM is threaded.

#include <cblas.h>

#include <cstdint>
#include <random>
#include <string>

#include "bench_common.h"

namespace {

using normgrad::Tensor;
using normgrad::bench::Buffer;

// Filled with normal values from a fixed seed.
Buffer random_buffer(std::int64_t count, unsigned seed) {
  Buffer buffer = normgrad::bench::aligned_buffer(count);
  std::mt19937 engine(seed);
  std::normal_distribution<float> normal;
  for (std::int64_t i = 0; i < count; ++i) buffer[i] = normal(engine);
  return buffer;
}

void report_flops(benchmark::State& state, std::int64_t n) {
  const double flops_per_product = 2.0 * static_cast<double>(n) * n * n;
  state.counters["flops"] = benchmark::Counter(
      flops_per_product * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

// C = A B through BLAS directly, on buffers allocated once: the baseline.
void sgemm_raw(benchmark::State& state, std::int64_t n, CBLAS_TRANSPOSE transpose_a) {
  const Buffer a = random_buffer(n * n, 1), b = random_buffer(n * n, 2),
               c = random_buffer(n * n, 3);
  const int size = static_cast<int>(n);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, transpose_a, CblasNoTrans, size, size, size, 1.0f, a.get(), size,
                b.get(), size, 0.0f, c.get(), size);
    benchmark::DoNotOptimize(c.get());
    benchmark::ClobberMemory();
  }
  report_flops(state, n);
}

enum class Left { Plain, Transposed, TransposedCopy };

// C = matmul(A, B) as a user writes it, with no graph recorded.
void matmul_normgrad(benchmark::State& state, std::int64_t n, Left left) {
  normgrad::NoGradGuard no_grad;
  const Tensor a = normgrad::randn({n, n}), b = normgrad::randn({n, n});
  for (auto _ : state) {
    // The view (and, for TransposedCopy, the copy) is made inside the loop, as a user would.
    const Tensor left_operand = left == Left::Plain        ? a
                                : left == Left::Transposed ? a.t()
                                                           : a.t().contiguous();
    Tensor c = normgrad::matmul(left_operand, b);
    benchmark::DoNotOptimize(c.data_ptr<float>());
  }
  report_flops(state, n);
}

// Names are "<what>/<n>", the baseline registered beside the normgrad case it is compared with
// (run_benchmarks.py also interleaves repetitions, so that both see the same machine state).
void register_benchmarks() {
  const auto add = [](const char* name, std::int64_t n, auto function, auto variant) {
    benchmark::RegisterBenchmark((std::string(name) + "/" + std::to_string(n)).c_str(),
                                 [=](benchmark::State& state) { function(state, n, variant); })
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  };
  for (std::int64_t n = 64; n <= 2048; n *= 2) {
    add("sgemm", n, sgemm_raw, CblasNoTrans);
    add("matmul", n, matmul_normgrad, Left::Plain);
  }
  add("sgemm_transposed_a", 1024, sgemm_raw, CblasTrans);
  add("matmul_transposed_a", 1024, matmul_normgrad, Left::Transposed);
  add("matmul_transposed_a_copied", 1024, matmul_normgrad, Left::TransposedCopy);
}

}  // namespace

int main(int argc, char** argv) {
  register_benchmarks();
  benchmark::AddCustomContext("openblas", openblas_get_config());
  return normgrad::bench::run_benchmark_main(argc, argv);
}
