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
//   exp          exp(a), no autograd.
// Medians over repetitions; sizing runs serve as warm-up.

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

void register_benchmarks() {
  const auto add = [](const char* name, auto function) {
    benchmark::RegisterBenchmark(name, function)->UseRealTime()->Unit(benchmark::kNanosecond);
  };
  add("add/4", add_no_grad);
  add("add_grad/4", add_with_grad);
  add("add_sum_backward/4", add_sum_backward);
  add("exp/4", exp_no_grad);
}

}  // namespace

int main(int argc, char** argv) {
  register_benchmarks();
  return normgrad::bench::run_benchmark_main(argc, argv);
}
