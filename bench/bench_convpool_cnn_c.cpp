// Times whole training steps of examples/convpool_cnn_c's model (convpool_cnn_c::train_step:
// zero_grad, forward with noise and dropout, mean cross-entropy, backward, Adam with eps inside
// the square root), at the paper's batch of 100 images. Prints one JSON line.
//
//   bench_convpool_cnn_c --norm rmsnorm --steps 10
//   {"framework":"normgrad","model":"convpool_cnn_c","norm":"rmsnorm","batch":100,...,
//    "step_seconds":[...],"median_seconds":...,"steps_per_second":...,"peak_rss_growth_bytes":...}
//
// The inputs are whitened-like images, N(0, 1) values from a fixed seed, and labels drawn
// uniformly: the time of a step does not depend on what the pixels show. The model is
// initialised from data (for none and weightnorm) on the first batch, as training does, before
// the warm-up steps. --write-inputs saves the batches, so that a twin in another framework
// trains on the same values. --conv implicit (with --device cuda) runs the convolutions as one
// implicit-GEMM kernel each (core/cuda.h's ConvAlgorithm) instead of through columns.

#include <normgrad/normgrad.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "convpool_cnn_c/model.h"
#include "convpool_cnn_c/training.h"
#include "process_memory.h"

namespace {

using namespace normgrad;

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Times training steps of convpool_cnn_c's ConvPool-CNN-C"};
  std::string norm = "none", device_name = "cpu", write_inputs;
  double width = 1.0;
  std::int64_t batch = 100, channels = 3, batches = 4;
  int steps = 10, warmup = 2, threads = 0;
  app.add_option("--norm", norm,
                 "none, batchnorm, weightnorm, layernorm, rmsnorm, prmsnorm:0.125, ...");
  app.add_option("--width", width, "scales the channel counts 96 and 192")
      ->check(CLI::PositiveNumber);
  app.add_option("--batch", batch, "images per batch")->check(CLI::PositiveNumber);
  app.add_option("--channels", channels, "input channels: 3 (CIFAR-10) or 1")
      ->check(CLI::PositiveNumber);
  app.add_option("--batches", batches, "distinct batches, trained on in turn")
      ->check(CLI::PositiveNumber);
  app.add_option("--steps", steps, "timed steps")->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "untimed steps first")->check(CLI::NonNegativeNumber);
  app.add_option("--threads", threads, "threads (0: OMP_NUM_THREADS or all cores)");
  app.add_option("--device", device_name, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--write-inputs", write_inputs, "save the batches (safetensors) and stop");
  std::string conv = "columns", precision = "float32";
  app.add_option("--precision", precision, "float32, or bfloat16 (mixed precision)")
      ->check(CLI::IsMember({"float32", "bfloat16"}));
  app.add_option("--conv", conv, "how CUDA convolutions multiply: columns or implicit (GEMM)")
      ->check(CLI::IsMember({"columns", "implicit"}));
  CLI11_PARSE(app, argc, argv);
  if (conv == "implicit" && device_name != "cuda") {
    std::cerr << "bench_convpool_cnn_c: --conv implicit needs --device cuda\n";
    return 2;
  }
  try {
    if (threads > 0) set_num_threads(threads);
    cuda::set_conv_algorithm(conv == "implicit" ? cuda::ConvAlgorithm::ImplicitGemm
                                                : cuda::ConvAlgorithm::Columns);
    const Device device = device_name == "cuda" ? Device::cuda() : Device::cpu();
    Generator generator(7);
    std::vector<Tensor> images, labels;
    for (std::int64_t i = 0; i < batches; ++i) {
      images.push_back(randn({batch, channels, 32, 32}, generator));
      labels.push_back(randint(0, 10, {batch}, generator));
    }
    if (!write_inputs.empty()) {
      nn::StateDict tensors;
      for (std::int64_t i = 0; i < batches; ++i) {
        tensors["batch." + std::to_string(i) + ".images"] = images[static_cast<std::size_t>(i)];
        tensors["batch." + std::to_string(i) + ".labels"] = labels[static_cast<std::size_t>(i)];
      }
      io::save_tensors(tensors, write_inputs, {{"batches", std::to_string(batches)}});
      return 0;
    }
    for (auto& t : images) t = t.to(device);
    for (auto& t : labels) t = t.to(device);

    const std::int64_t rss_before = bench::resident_bytes();
    convpool_cnn_c::ConvPoolCnnC model({.norm = norm,
                                        .input_channels = channels,
                                        .width = width,
                                        .seed = 1,
                                        .precision = precision});
    model.to(device);
    model.initialise_from_data(images[0]);
    const auto spec = convpool_cnn_c::parse_model_norm(norm);
    optim::Adam adam(model.parameters(),
                     convpool_cnn_c::paper_adam(convpool_cnn_c::base_learning_rate(spec)));
    std::vector<double> times, losses;
    for (int step = 0; step < warmup + steps; ++step) {
      const auto i = static_cast<std::size_t>(step % batches);
      const auto start = std::chrono::steady_clock::now();
      const auto result = convpool_cnn_c::train_step(model, adam, images[i], labels[i]);
      if (device.is_cuda()) cuda::synchronize();
      if (step >= warmup)
        times.push_back(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      losses.push_back(result.loss);
    }
    const double median_seconds = median(times);
    std::cout << nlohmann::json{{"framework", "normgrad"},
                                {"model", "convpool_cnn_c"},
                                {"norm", norm},
                                {"width", width},
                                {"batch", batch},
                                {"channels", channels},
                                {"device", device.str()},
                                {"conv", conv},
                                {"precision", precision},
                                {"threads", get_num_threads()},
                                {"parameters", convpool_cnn_c::count_parameters(model)},
                                {"losses", losses},
                                {"step_seconds", times},
                                {"median_seconds", median_seconds},
                                {"steps_per_second", 1 / median_seconds},
                                {"peak_rss_growth_bytes",
                                 bench::peak_resident_bytes() - rss_before}}
                     .dump()
              << "\n";
    return 0;
  } catch (const Error& error) {
    std::cerr << "bench_convpool_cnn_c: " << error.what() << "\n";
    return 1;
  }
}
