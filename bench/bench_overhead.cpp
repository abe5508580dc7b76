// The fixed cost of one op: what a call costs when the data is too small to matter.
//
// On 4-element float32 tensors the arithmetic is a few nanoseconds, so the time per call is the
// framework's own work: argument checks, shape broadcasting, allocating the output's Storage
// and TensorImpl, the backend dispatch and the strided-layout setup of the kernel, and, with
// autograd on, building the graph node. Tensors this small never fork threads, so this is
// single-threaded, and the numbers are nanoseconds per call. Cases:
//   add          a + b, no autograd (NoGradGuard);
//   add_grad     a + b with requires_grad on both: the AddBackward node is recorded;
//   add_sum_backward   (a + b).sum().backward(): two forward ops, the graph, and the backward
//                pass that writes a.grad and b.grad (cleared each iteration, so every
//                iteration does the same work);
//   exp          exp(a), no autograd;
//   add_profiled a + b, no autograd, with a profile open (profiler/profile.h): what recording
//                an op costs. A fresh profile every 4096 calls, opened and closed outside the
//                timing, keeps its records from growing without end.
// Medians over repetitions; sizing runs serve as warm-up.

#include <optional>

#include "bench_common.h"

namespace {

using normgrad::Tensor;

constexpr std::int64_t tiny = 4;

void add_no_grad(benchmark::State& state) {
  normgrad::NoGradGuard no_grad;
  const Tensor a = normgrad::randn({tiny}), b = normgrad::randn({tiny});
  for (auto _ : state) {
    Tensor c = a + b;
    benchmark::DoNotOptimize(c.data_ptr<float>());
  }
}

void add_with_grad(benchmark::State& state) {
  Tensor a = normgrad::randn({tiny}), b = normgrad::randn({tiny});
  a.requires_grad_();
  b.requires_grad_();
  for (auto _ : state) {
    Tensor c = a + b;
    benchmark::DoNotOptimize(c.data_ptr<float>());
  }
}

void add_sum_backward(benchmark::State& state) {
  Tensor a = normgrad::randn({tiny}), b = normgrad::randn({tiny});
  a.requires_grad_();
  b.requires_grad_();
  for (auto _ : state) {
    a.zero_grad();
    b.zero_grad();
    (a + b).sum().backward();
    benchmark::DoNotOptimize(a.grad().data_ptr<float>());
  }
}

void exp_no_grad(benchmark::State& state) {
  normgrad::NoGradGuard no_grad;
  const Tensor a = normgrad::randn({tiny});
  for (auto _ : state) {
    Tensor c = normgrad::exp(a);
    benchmark::DoNotOptimize(c.data_ptr<float>());
  }
}

void add_profiled(benchmark::State& state) {
  normgrad::NoGradGuard no_grad;
  const Tensor a = normgrad::randn({tiny}), b = normgrad::randn({tiny});
  std::optional<normgrad::profiler::Profile> profile;
  std::int64_t calls = 0;
  for (auto _ : state) {
    if (calls++ % 4096 == 0) {
      state.PauseTiming();
      profile.reset();
      profile.emplace();
      state.ResumeTiming();
    }
    Tensor c = a + b;
    benchmark::DoNotOptimize(c.data_ptr<float>());
  }
  profile.reset();  // after the timed loop
}

void register_benchmarks() {
  const auto add = [](const char* name, auto function) {
    benchmark::RegisterBenchmark(name, function)->UseRealTime()->Unit(benchmark::kNanosecond);
  };
  add("add/4", add_no_grad);
  add("add_grad/4", add_with_grad);
  add("add_sum_backward/4", add_sum_backward);
  add("exp/4", exp_no_grad);
  add("add_profiled/4", add_profiled);
}

}  // namespace

int main(int argc, char** argv) {
  register_benchmarks();
  return normgrad::bench::run_benchmark_main(argc, argv);
}
