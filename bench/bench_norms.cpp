// The normalisers of the paper — LayerNorm (gain and bias), RMSNorm (gain, no bias, as in the
// paper's code) and pRMSNorm (p = 6.25%) — through their modules in float32, forward, backward
// and both, against the memory-bandwidth ceilings (memcpy, STREAM triad) measured in the same
// run. A norm reads and writes whole tensors and does a few flops per value, so bytes per
// second against the triad's is its measure.
//
// Shapes rows x hidden: 4096x1024 (16 MiB per tensor), 16384x512 and 2048x4096 (32 MiB),
// 65536x256 (64 MiB): from half the last-level cache of the machine this was written on to
// twice it, and from few long rows to many short ones.
//
// Passes, each iteration doing what one training step pays for the layer:
//   forward           y = norm(x) with x requiring grad, so that the backward node is recorded
//                     (it keeps x and the per-row statistics, no copies);
//   backward          the norm's own backward node, called with dy: y.grad_fn()->apply(dy),
//                     which allocates dx, dgain (and dbias) and runs the fused backward kernel.
//                     In a network dx goes on to the layer below; y.backward(dy) onto a leaf x
//                     would add a copy of dx into x.grad (two more passes over a tensor) that
//                     no layer in a network pays, so the engine is left out;
//   forward_backward  both, one after the other.
// Bytes moved (SetBytesProcessed, and the counter bytes_per_iteration): forward reads x and
// writes y, 2 tensors; backward reads x and dy and writes dx, 3 tensors; both, 5. The gain,
// the bias and the per-row statistics are left out: under 1% of the traffic at these shapes.
//
// rms_norm_composed at 4096x1024 is RMSNorm written with primitive ops (nn/norms/composed.h),
// the way a framework without a fused kernel runs it. Its backward has many nodes, so it goes
// through the engine, y.backward(dy, retain_graph), with x a leaf: that includes the copy into
// x.grad, a small part of its cost. Its bytes are counted as for the fused ones (the minimum
// any implementation must move), so its GB/s say how far it is from that minimum.
// Wall time throughout, since the work is threaded; sizing runs serve as warm-up.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench_common.h"

namespace {

using normgrad::Shape;
using normgrad::Tensor;
namespace nn = normgrad::nn;

using Norm = std::function<Tensor(const Tensor& x)>;
enum class Pass { Forward, Backward, ForwardBackward };

struct Size {
  std::int64_t rows, hidden;
};
constexpr Size sizes[] = {{4096, 1024}, {16384, 512}, {2048, 4096}, {65536, 256}};
constexpr Size composed_size{4096, 1024};

std::int64_t tensor_bytes(Size size) {
  return size.rows * size.hidden * static_cast<std::int64_t>(sizeof(float));
}

std::int64_t bytes_moved(Pass pass, Size size) {
  const std::int64_t tensors = pass == Pass::Forward ? 2 : pass == Pass::Backward ? 3 : 5;
  return tensors * tensor_bytes(size);
}

// Each norm owns its module (or its gain), kept alive by the returned function.
Norm layer_norm(std::int64_t hidden) {
  auto module = std::make_shared<nn::LayerNorm>(Shape{hidden});
  return [module](const Tensor& x) { return module->forward(x); };
}

Norm rms_norm(std::int64_t hidden) {
  auto module = std::make_shared<nn::RMSNorm>(Shape{hidden});
  return [module](const Tensor& x) { return module->forward(x); };
}

Norm partial_rms_norm(std::int64_t hidden) {
  auto module = std::make_shared<nn::RMSNorm>(Shape{hidden}, nn::RMSNormOptions{.partial = 0.0625});
  return [module](const Tensor& x) { return module->forward(x); };
}

Norm rms_norm_composed(std::int64_t hidden) {
  const Tensor gain = normgrad::ones({hidden}).requires_grad_();
  return [gain](const Tensor& x) { return nn::rms_norm_composed(x, 1, gain, Tensor(), 1e-5); };
}

void set_counters(benchmark::State& state, std::int64_t bytes) {
  normgrad::bench::set_bytes(state, bytes);
  state.counters["bytes_per_iteration"] = static_cast<double>(bytes);
}

// One pass of a fused norm: forward through the module, backward through its node alone (see
// above); `node` is the node of a recorded forward, which the backward-only pass replays.
void fused_pass_once(const Norm& norm, const std::shared_ptr<normgrad::autograd::Node>& node,
                     const Tensor& x, const Tensor& dy, Pass pass) {
  if (pass == Pass::Backward) {
    const std::vector<Tensor> grads = node->apply(dy);
    benchmark::DoNotOptimize(grads[0].data_ptr<float>());
    return;
  }
  const Tensor y = norm(x);
  benchmark::DoNotOptimize(y.data_ptr<float>());
  if (pass == Pass::ForwardBackward) {
    const std::vector<Tensor> grads = y.grad_fn()->apply(dy);
    benchmark::DoNotOptimize(grads[0].data_ptr<float>());
  }
}

void fused_pass(benchmark::State& state, const Norm& norm, Pass pass, Size size) {
  normgrad::Generator generator(1);
  const Tensor x = normgrad::randn({size.rows, size.hidden}, generator).requires_grad_();
  const Tensor dy = normgrad::randn({size.rows, size.hidden}, generator);
  const Tensor recorded = norm(x);
  for (auto _ : state) fused_pass_once(norm, recorded.grad_fn(), x, dy, pass);
  set_counters(state, bytes_moved(pass, size));
}

// pRMSNorm against RMSNorm, paired: each iteration times one pass of each, in alternating
// order, and keeps the ratio of the two times. On a shared machine a slow spell then hits both
// sides of a pair alike, where separate benchmarks would see it in one and not the other. The
// median ratio is the counter partial_over_full; the time shown is that of the pair.
void partial_over_full(benchmark::State& state, Pass pass, Size size) {
  const Norm norms[2] = {rms_norm(size.hidden), partial_rms_norm(size.hidden)};
  normgrad::Generator generator(1);
  const Tensor x = normgrad::randn({size.rows, size.hidden}, generator).requires_grad_();
  const Tensor dy = normgrad::randn({size.rows, size.hidden}, generator);
  const Tensor recorded[2] = {norms[0](x), norms[1](x)};
  std::vector<double> ratios;
  for (auto _ : state) {
    double seconds[2] = {0, 0};
    const bool partial_first = ratios.size() % 2 == 1;
    for (int turn = 0; turn < 2; ++turn) {
      const int which = partial_first ? 1 - turn : turn;
      const auto start = std::chrono::steady_clock::now();
      fused_pass_once(norms[which], recorded[which].grad_fn(), x, dy, pass);
      seconds[which] =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    ratios.push_back(seconds[1] / seconds[0]);
    state.SetIterationTime(seconds[0] + seconds[1]);
  }
  std::sort(ratios.begin(), ratios.end());
  state.counters["partial_over_full"] = ratios.empty() ? 0.0 : ratios[ratios.size() / 2];
}

// A composed norm: the backward runs through the engine, into x.grad and gain.grad.
void composed_pass(benchmark::State& state, const Norm& norm, Pass pass, Size size) {
  normgrad::Generator generator(1);
  Tensor x = normgrad::randn({size.rows, size.hidden}, generator).requires_grad_();
  const Tensor dy = normgrad::randn({size.rows, size.hidden}, generator);
  const Tensor recorded = norm(x);
  for (auto _ : state) {
    x.zero_grad();
    if (pass == Pass::Backward) {
      recorded.backward(dy, /*retain_graph=*/true);
    } else {
      const Tensor y = norm(x);
      benchmark::DoNotOptimize(y.data_ptr<float>());
      if (pass == Pass::ForwardBackward) y.backward(dy);
    }
    if (pass != Pass::Forward) benchmark::DoNotOptimize(x.grad().data_ptr<float>());
  }
  set_counters(state, bytes_moved(pass, size));
}

const char* pass_name(Pass pass) {
  return pass == Pass::Forward    ? "forward"
         : pass == Pass::Backward ? "backward"
                                  : "forward_backward";
}

using PassFunction = void (*)(benchmark::State&, const Norm&, Pass, Size);

void register_norm(const char* name, Norm (*make)(std::int64_t), PassFunction run, Size size) {
  for (Pass pass : {Pass::Forward, Pass::Backward, Pass::ForwardBackward}) {
    const std::string label = std::string(name) + "/" + pass_name(pass) + "/" +
                              std::to_string(size.rows) + "x" + std::to_string(size.hidden);
    // The module is built when the benchmark first runs, not at registration.
    benchmark::RegisterBenchmark(label.c_str(),
                                 [make, run, pass, size](benchmark::State& state) {
                                   run(state, make(size.hidden), pass, size);
                                 })
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
}

void register_benchmarks() {
  normgrad::bench::register_bandwidth_ceilings();
  for (Size size : sizes) {
    register_norm("layer_norm", layer_norm, fused_pass, size);
    register_norm("rms_norm", rms_norm, fused_pass, size);
    register_norm("partial_rms_norm", partial_rms_norm, fused_pass, size);
  }
  register_norm("rms_norm_composed", rms_norm_composed, composed_pass, composed_size);
  for (Size size : sizes)
    for (Pass pass : {Pass::Forward, Pass::Backward, Pass::ForwardBackward}) {
      const std::string label = std::string("partial_over_full/") + pass_name(pass) + "/" +
                                std::to_string(size.rows) + "x" + std::to_string(size.hidden);
      benchmark::RegisterBenchmark(
          label.c_str(),
          [pass, size](benchmark::State& state) { partial_over_full(state, pass, size); })
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
    }
}

}  // namespace

int main(int argc, char** argv) {
  register_benchmarks();
  return normgrad::bench::run_benchmark_main(argc, argv);
}
