// bfloat16 against float32 for ops that take it natively on a GPU: a matrix product, LayerNorm
// and RMSNorm forward and backward (with gradients for x, the gain and the bias), GELU and
// softmax forward and backward, an elementwise x y + z, a sum over rows, and a 3 x 3
// convolution forward and backward. Each op runs on the same values in both dtypes, in
// alternating rounds; the program prints each one's median time per call, and the median over
// rounds of its bfloat16 time over its float32 time in the same round. --json prints one JSON
// line per op and dtype instead.
//
// On a GPU, cuBLAS's bfloat16 product runs on the tensor cores, and the other kernels move half
// the bytes. On the CPU every bfloat16 op goes through float32 copies (backends/
// bfloat16_widening.h): the ratio there is the price of those copies, not a speed-up.
//
//   bench_bfloat16 [--device cpu|cuda] [--size 2048] [--rows 4096] [--features 4096]
//                  [--conv-batch 32] [--rounds 7] [--min-time 0.2] [--quick] [--json]

#include <normgrad/normgrad.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "timing.h"

namespace {

using namespace normgrad;

struct OpCase {
  std::string name;
  double flops_per_call;                // 0 where a rate means nothing
  std::function<void()> step[2];        // float32, bfloat16
  std::vector<double> seconds[2] = {};  // one entry a round
  std::vector<double> ratios = {};      // bfloat16 over float32, one a round
};

Tensor on(const Tensor& t, DType dtype, Device device) { return t.to(dtype).to(device).detach(); }

// y = norm(x) with gradients for x, gain and bias, all in `dtype`; the gradients are dropped.
std::function<void()> norm_step(bool layer, const Tensor& x0, const Tensor& gain0,
                                const Tensor& bias0, const Tensor& upstream0, DType dtype,
                                Device device) {
  const Tensor x = on(x0, dtype, device).requires_grad_();
  const Tensor gain = on(gain0, dtype, device).requires_grad_();
  const Tensor bias = on(bias0, dtype, device).requires_grad_();
  const Tensor upstream = on(upstream0, dtype, device);
  return [layer, x, gain, bias, upstream] {
    const Tensor y =
        layer ? normgrad::layer_norm(x, 1, gain, bias) : normgrad::rms_norm(x, 1, gain, bias);
    y.backward(upstream);
    for (Tensor t : {x, gain, bias}) t.zero_grad();
  };
}

// f(inputs) forward and backward from `upstream`, all in `dtype`; the gradients are dropped.
std::function<void()> grad_step(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                                const std::vector<Tensor>& inputs0, const Tensor& upstream0,
                                DType dtype, Device device) {
  std::vector<Tensor> inputs;
  for (const Tensor& input : inputs0) inputs.push_back(on(input, dtype, device).requires_grad_());
  const Tensor upstream = on(upstream0, dtype, device);
  return [f, inputs, upstream] {
    f(inputs).backward(upstream);
    for (Tensor t : inputs) t.zero_grad();
  };
}

// A convolution's shape: batch, channels in and out, square images.
struct ConvShape {
  std::int64_t batch, channels, size;
};

int run(const bench::Settings& settings, std::int64_t size, std::int64_t rows,
        std::int64_t features, const ConvShape& conv, bool json) {
  Generator generator(3);
  const Device device = settings.device;
  std::vector<OpCase> cases;
  {
    const Tensor a0 = randn({size, size}, generator), b0 = randn({size, size}, generator);
    OpCase product{"matmul " + std::to_string(size) + "^3", 2.0 * size * size * size, {}};
    for (int which = 0; which < 2; ++which) {
      const DType dtype = which == 0 ? DType::Float32 : DType::BFloat16;
      const Tensor a = on(a0, dtype, device), b = on(b0, dtype, device);
      product.step[which] = [a, b] { (void)matmul(a, b); };
    }
    cases.push_back(product);
  }
  const Tensor x0 = randn({rows, features}, generator),
               upstream0 = randn({rows, features}, generator);
  const Tensor gain0 = randn({features}, generator), bias0 = randn({features}, generator);
  for (const bool layer : {true, false}) {
    OpCase norm{std::string(layer ? "layernorm" : "rmsnorm") + " fwd+bwd " + std::to_string(rows) +
                    "x" + std::to_string(features),
                0,
                {}};
    for (int which = 0; which < 2; ++which)
      norm.step[which] = norm_step(layer, x0, gain0, bias0, upstream0,
                                   which == 0 ? DType::Float32 : DType::BFloat16, device);
    cases.push_back(norm);
  }
  const std::string shape = std::to_string(rows) + "x" + std::to_string(features);
  using Function = std::function<Tensor(const std::vector<Tensor>&)>;
  const auto add_grad_case = [&](const std::string& name, const Function& f,
                                 const std::vector<Tensor>& inputs, const Tensor& upstream) {
    OpCase op{name, 0, {}};
    for (int which = 0; which < 2; ++which)
      op.step[which] =
          grad_step(f, inputs, upstream, which == 0 ? DType::Float32 : DType::BFloat16, device);
    cases.push_back(op);
  };
  add_grad_case(
      "gelu fwd+bwd " + shape, [](const std::vector<Tensor>& in) { return gelu(in[0]); }, {x0},
      upstream0);
  add_grad_case(
      "softmax fwd+bwd " + shape, [](const std::vector<Tensor>& in) { return softmax(in[0], -1); },
      {x0}, upstream0);
  {
    OpCase elementwise{"x y + z " + shape, 0, {}};
    OpCase row_sums{"sum over rows " + shape, 0, {}};
    for (int which = 0; which < 2; ++which) {
      const DType dtype = which == 0 ? DType::Float32 : DType::BFloat16;
      const Tensor x = on(x0, dtype, device), y = on(upstream0, dtype, device);
      const Tensor z = on(gain0, dtype, device);  // a row broadcast down the rows
      elementwise.step[which] = [x, y, z] { (void)(x * y + z); };
      row_sums.step[which] = [x] { (void)x.sum({1}); };
    }
    cases.push_back(elementwise);
    cases.push_back(row_sums);
  }
  {
    const Tensor image0 = randn({conv.batch, conv.channels, conv.size, conv.size}, generator);
    const Tensor weight0 = randn({conv.channels, conv.channels, 3, 3}, generator);
    const Tensor upstream = randn({conv.batch, conv.channels, conv.size, conv.size}, generator);
    add_grad_case(
        "conv2d 3x3 fwd+bwd " + std::to_string(conv.batch) + "x" + std::to_string(conv.channels) +
            "x" + std::to_string(conv.size) + "^2",
        [](const std::vector<Tensor>& in) { return conv2d(in[0], in[1], Tensor(), 1, 1); },
        {image0, weight0}, upstream);
  }

  for (OpCase& op : cases) {
    const int calls[2] = {bench::calls_per_batch(op.step[0], settings),
                          bench::calls_per_batch(op.step[1], settings)};
    for (int round = 0; round < settings.repetitions; ++round) {
      double seconds[2];
      for (int which = 0; which < 2; ++which) {
        seconds[which] = bench::seconds_per_call(op.step[which], calls[which], device);
        op.seconds[which].push_back(seconds[which]);
      }
      op.ratios.push_back(seconds[1] / seconds[0]);
    }
  }

  if (!json)
    std::printf("%-32s %14s %14s %14s %8s\n", "op", "float32 (ms)", "bfloat16 (ms)", "bf16 / f32",
                "cv");
  for (const OpCase& op : cases) {
    const double ratio = bench::median(op.ratios);
    const double f32 = bench::median(op.seconds[0]), bf16 = bench::median(op.seconds[1]);
    if (json) {
      for (int which = 0; which < 2; ++which)
        std::cout << R"({"op":")" << op.name << R"(","dtype":")"
                  << (which == 0 ? "float32" : "bfloat16") << R"(","device":")" << device
                  << R"(","median_seconds":)" << bench::median(op.seconds[which]) << R"(,"cv":)"
                  << bench::coefficient_of_variation(op.seconds[which]) << R"(,"ratio_to_float32":)"
                  << (which == 0 ? 1.0 : ratio) << "}" << std::endl;
      continue;
    }
    std::printf("%-32s %14.4f %14.4f %14.3f %8.3f\n", op.name.c_str(), f32 * 1e3, bf16 * 1e3, ratio,
                bench::coefficient_of_variation(op.ratios));
    if (op.flops_per_call > 0)
      std::printf("%-32s %14.2f %14.2f   TFLOP/s\n", "", op.flops_per_call / f32 * 1e-12,
                  op.flops_per_call / bf16 * 1e-12);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "bfloat16 against float32: a product, the norms, elementwise ops, softmax, a sum "
      "and a convolution, on one device"};
  std::string device_name = "cpu";
  std::int64_t size = 2048, rows = 4096, features = 4096;
  ConvShape conv{32, 96, 32};
  int rounds = 7;
  double min_time = 0.2;
  bool quick = false, json = false;
  app.add_option("--device", device_name, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--size", size, "the product's m = n = k")->check(CLI::Range(1, 1 << 15));
  app.add_option("--rows", rows, "the norms' rows")->check(CLI::Range(1, 1 << 20));
  app.add_option("--features", features, "the norms' row width")->check(CLI::Range(1, 1 << 16));
  app.add_option("--conv-batch", conv.batch,
                 "the convolution's batch of 32 x 32 images of 96 "
                 "channels")
      ->check(CLI::Range(1, 1 << 12));
  app.add_option("--rounds", rounds, "alternating rounds")->check(CLI::Range(1, 1000));
  app.add_option("--min-time", min_time, "seconds per timed batch")->check(CLI::Range(0.0, 60.0));
  app.add_flag("--quick", quick, "small sizes and one short round (a smoke test)");
  app.add_flag("--json", json, "one JSON line per op and dtype");
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    size = 64;
    rows = 64;
    features = 256;
    conv = {2, 8, 8};
    rounds = 1;
    min_time = 0.01;
  }
  try {
    const Device device = device_name == "cuda" ? Device::cuda() : Device::cpu();
    if (device.is_cuda() && !cuda::is_available()) {
      std::fprintf(stderr, "bench_bfloat16: --device cuda, but no CUDA device is available\n");
      return 2;
    }
    return run({device, rounds, min_time}, size, rows, features, conv, json);
  } catch (const Error& error) {
    std::fprintf(stderr, "bench_bfloat16: %s\n", error.what());
    return 1;
  }
}
