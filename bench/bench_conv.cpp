// Conv2d and pooling at the shapes of the paper's CIFAR model (ConvPool-CNN-C, its App. A.4),
// float32, batch 32: what conv2d costs beside the GEMMs it cannot avoid.
//
// conv2d is im2col then GEMMs, [O, K] @ [K, n L] for a chunk of n samples with K = C kh kw and
// L = OH OW: 2 N O K L flops forward. The ceiling is the same flops as one bare cblas_sgemm
// call over the whole batch, [O, K] @ [K, N L], on buffers allocated once, in the same run and
// with the same threads; the gap is im2col, the copy into [N, O, L] with the bias, the
// allocations, and chunking where the columns of the batch exceed conv2d's budget. Forward
// plus backward does three times the GEMM work (y, dW and the columns of dx) plus im2col
// again and col2im, and is reported at 3 x the forward flops. Pooling is memory-bound and is
// reported in bytes, the int64 indices included (forward: read x, write y and the indices;
// backward: read dy and the indices, write dx). Wall time, since the GEMMs are threaded.
// run_benchmarks.py runs this program and writes its section of RESULTS.md (conv_results.py).

#include <cblas.h>

#include <cstdint>
#include <string>

#include "bench_common.h"

namespace {

using normgrad::Tensor;

constexpr std::int64_t batch = 32;

struct Layer {
  const char* name;
  std::int64_t in_channels, out_channels, size, kernel, padding;
  std::int64_t out_size() const { return size + 2 * padding - kernel + 1; }
  double flops() const {
    const double taps = static_cast<double>(in_channels * kernel * kernel);
    const double positions = static_cast<double>(out_size() * out_size());
    return 2.0 * batch * static_cast<double>(out_channels) * taps * positions;
  }
};

// {name, C, O, H = W, kernel, padding}
const Layer layers[] = {
    {"conv3x3_3to96_32px", 3, 96, 32, 3, 1},           // the first layer, on the image
    {"conv3x3_96to96_32px", 96, 96, 32, 3, 1},         // first block
    {"conv3x3_192to192_16px", 192, 192, 16, 3, 1},     // second block
    {"conv3x3_pad0_192to192_8px", 192, 192, 8, 3, 0},  // the head's unpadded 3x3
    {"conv1x1_192to192_6px", 192, 192, 6, 1, 0},       // the head's 1x1
};

void report_flops(benchmark::State& state, double flops_per_iteration) {
  state.counters["flops"] = benchmark::Counter(
      flops_per_iteration * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

// The forward pass's flops as one GEMM through BLAS directly, [O, K] @ [K, N L]: the ceiling.
void sgemm_raw(benchmark::State& state, const Layer& layer) {
  const std::int64_t o = layer.out_channels, k = layer.in_channels * layer.kernel * layer.kernel;
  const std::int64_t columns = batch * layer.out_size() * layer.out_size();
  const auto w = normgrad::bench::touched_buffer(o * k, 0.01f);
  const auto x = normgrad::bench::touched_buffer(k * columns, 1.0f);
  const auto y = normgrad::bench::touched_buffer(o * columns, 0.0f);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(o),
                static_cast<int>(columns), static_cast<int>(k), 1.0f, w.get(), static_cast<int>(k),
                x.get(), static_cast<int>(columns), 0.0f, y.get(), static_cast<int>(columns));
    benchmark::DoNotOptimize(y.get());
    benchmark::ClobberMemory();
  }
  report_flops(state, layer.flops());
}

void conv_forward(benchmark::State& state, const Layer& layer) {
  normgrad::NoGradGuard no_grad;
  normgrad::nn::Conv2d conv(layer.in_channels, layer.out_channels, layer.kernel,
                            {.padding = layer.padding});
  const Tensor x = normgrad::randn({batch, layer.in_channels, layer.size, layer.size});
  for (auto _ : state) {
    Tensor y = conv.forward(x);
    benchmark::DoNotOptimize(y.data_ptr<float>());
  }
  report_flops(state, layer.flops());
}

void conv_forward_backward(benchmark::State& state, const Layer& layer) {
  normgrad::nn::Conv2d conv(layer.in_channels, layer.out_channels, layer.kernel,
                            {.padding = layer.padding});
  Tensor x = normgrad::randn({batch, layer.in_channels, layer.size, layer.size});
  x.requires_grad_();
  const Tensor dy =
      normgrad::randn({batch, layer.out_channels, layer.out_size(), layer.out_size()});
  for (auto _ : state) {
    conv.zero_grad();
    x.zero_grad();
    conv.forward(x).backward(dy);
    benchmark::DoNotOptimize(x.grad().data_ptr<float>());
  }
  report_flops(state, 3 * layer.flops());
}

// 2x2 max-pool, stride 2, on the first block's output: [32, 96, 32, 32] -> [32, 96, 16, 16].
void max_pool(benchmark::State& state, bool backward) {
  Tensor x = normgrad::randn({batch, 96, 32, 32});
  if (backward) x.requires_grad_();
  const Tensor dy = normgrad::randn({batch, 96, 16, 16});
  // x and dx in float32; y and dy in float32 beside the int64 indices.
  const std::int64_t in_bytes = x.numel() * 4, out_bytes = dy.numel() * (4 + 8);
  for (auto _ : state) {
    Tensor y = normgrad::max_pool2d(x, 2);
    if (backward) {
      x.zero_grad();
      y.backward(dy);
    }
    benchmark::DoNotOptimize(y.data_ptr<float>());
  }
  normgrad::bench::set_bytes(state, backward ? 2 * (in_bytes + out_bytes) : in_bytes + out_bytes);
}

void register_benchmarks() {
  const auto add = [](const std::string& name, auto function) {
    benchmark::RegisterBenchmark(name.c_str(), function)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  };
  for (const Layer& layer : layers) {
    const std::string name = layer.name;
    add("sgemm/" + name, [&layer](benchmark::State& state) { sgemm_raw(state, layer); });
    add("conv2d_forward/" + name,
        [&layer](benchmark::State& state) { conv_forward(state, layer); });
    add("conv2d_forward_backward/" + name,
        [&layer](benchmark::State& state) { conv_forward_backward(state, layer); });
  }
  add("max_pool2d_forward/2x2", [](benchmark::State& state) { max_pool(state, false); });
  add("max_pool2d_forward_backward/2x2", [](benchmark::State& state) { max_pool(state, true); });
  add("memcpy", normgrad::bench::memcpy_one_thread);
}

}  // namespace

int main(int argc, char** argv) {
  register_benchmarks();
  benchmark::AddCustomContext("openblas", openblas_get_config());
  return normgrad::bench::run_benchmark_main(argc, argv);
}
