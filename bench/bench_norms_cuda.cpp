// LayerNorm, RMSNorm and pRMSNorm (p = 6.25%) on a GPU, through their modules in float32:
// forward, backward and both, beside the device's own copy bandwidth measured in the same run
// (y.copy_(x), one read and one write per value). Prints one JSON line per measurement;
// bench/run_cuda_norms.py runs it with bench_norms_cuda_torch.py and writes the table.
//
//   bench_norms_cuda [--device cuda|cpu] [--repetitions 7] [--min-time 0.2] [--quick]
//   {"name":"rms_norm","rows":32768,"hidden":1024,"pass":"forward","median_seconds":...,
//    "cv":...,"bytes":...}
//
// Shapes rows x hidden: 32768x1024, 16384x4096, 8192x8192 and 65536x256 (128 to 256 MiB per
// tensor, far beyond any GPU cache). The passes are those of bench_norms.cpp: forward records
// the backward node; backward is that node alone, y.grad_fn()->apply(dy); bytes count x and y
// for forward, x, dy and dx for backward, five tensors for both. Each measurement times
// batches of iterations that last --min-time seconds between two waits for the device, and
// reports the median time per iteration over --repetitions batches. --device cpu and --quick
// (shapes 64 times smaller, 2 short repetitions) check the program on a machine without a GPU.

#include <normgrad/normgrad.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <string>

#include "timing.h"

namespace {

using namespace normgrad;
using bench::Settings;
using bench::time_per_call;

struct Size {
  std::int64_t rows, hidden;
};

void report(const std::string& name, Size size, const std::string& pass,
            std::pair<double, double> timing, double bytes) {
  std::cout << R"({"name":")" << name << R"(","rows":)" << size.rows << R"(,"hidden":)"
            << size.hidden << R"(,"pass":")" << pass << R"(","median_seconds":)" << timing.first
            << R"(,"cv":)" << timing.second << R"(,"bytes":)" << bytes << "}" << std::endl;
}

std::shared_ptr<nn::Norm> make_norm(const std::string& name, std::int64_t hidden) {
  if (name == "layer_norm") return std::make_shared<nn::LayerNorm>(Shape{hidden});
  if (name == "rms_norm") return std::make_shared<nn::RMSNorm>(Shape{hidden});
  return std::make_shared<nn::RMSNorm>(Shape{hidden}, nn::RMSNormOptions{.partial = 0.0625});
}

void measure(Size size, const Settings& settings) {
  Generator generator(1);
  const TensorOptions options{.device = settings.device};
  const Tensor x = randn({size.rows, size.hidden}, generator).to(settings.device).requires_grad_();
  const Tensor dy = randn({size.rows, size.hidden}, generator).to(settings.device);
  const double tensor_bytes = static_cast<double>(size.rows * size.hidden) * sizeof(float);
  {
    Tensor copy = empty({size.rows, size.hidden}, options);
    const Tensor source = x.detach();
    report("copy", size, "copy", time_per_call([&] { copy.copy_(source); }, settings),
           2 * tensor_bytes);
  }
  for (const std::string name : {"layer_norm", "rms_norm", "partial_rms_norm"}) {
    const auto module = make_norm(name, size.hidden);
    module->to(settings.device);
    const Tensor recorded = module->forward(x);
    const auto node = recorded.grad_fn();
    report(name, size, "forward", time_per_call([&] { module->forward(x); }, settings),
           2 * tensor_bytes);
    report(name, size, "backward", time_per_call([&] { node->apply(dy); }, settings),
           3 * tensor_bytes);
    report(name, size, "forward_backward",
           time_per_call([&] { module->forward(x).grad_fn()->apply(dy); }, settings),
           5 * tensor_bytes);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Times the fused normalisers on a GPU against its copy bandwidth"};
  std::string device_name = "cuda";
  int repetitions = 7;
  double min_time = 0.2;
  bool quick = false;
  app.add_option("--device", device_name, "cuda or cpu")->check(CLI::IsMember({"cuda", "cpu"}));
  app.add_option("--repetitions", repetitions, "timed batches")->check(CLI::PositiveNumber);
  app.add_option("--min-time", min_time, "seconds per batch")->check(CLI::PositiveNumber);
  app.add_flag("--quick", quick, "shapes 64 times smaller, 2 short repetitions");
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    repetitions = 2;
    min_time = 0.02;
  }
  try {
    const Settings settings{device_name == "cuda" ? Device::cuda() : Device::cpu(), repetitions,
                            min_time};
    const std::int64_t scale = quick ? 64 : 1;
    for (const Size size :
         {Size{32768, 1024}, Size{16384, 4096}, Size{8192, 8192}, Size{65536, 256}})
      measure({size.rows / scale, size.hidden}, settings);
  } catch (const Error& error) {
    std::cerr << "bench_norms_cuda: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
