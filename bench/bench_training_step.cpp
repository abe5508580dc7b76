// Times whole training steps (zero_grad, forward, loss, backward, Adam) of the GRU language
// model in training_models.h or of examples/convpool_cnn_c's ConvPool-CNN-C, and reports the median
// step time and peak memory as one JSON line:
//
//   bench_training_step --model gru --norm rmsnorm --steps 5 [--device cuda]
//   {"model":"gru","norm":"rmsnorm","threads":2,"step_seconds":[...],"median_seconds":...,
//    "peak_tensor_bytes":...,"peak_rss_growth_bytes":...}
//
// peak_rss_growth_bytes is the process's peak resident set minus its resident set before the
// model was built, the measure bench_training_step_torch.py takes too; peak_tensor_bytes is
// the most that normgrad's allocator had handed out to tensors at once (on the GPU with
// --device cuda, where each step ends by waiting for the device).
// run_training_steps.py runs both and writes the table in RESULTS.md.
//
// --graph (with --device cuda) records the whole step once as a CUDA graph after the warm-up
// steps, Adam included (capturable: its counts and bias corrections on the device), and
// replays it each step. --conv implicit (with --device cuda) runs the CNN's convolutions as
// one implicit-GEMM kernel each (core/cuda.h's ConvAlgorithm). --precision bfloat16 trains in
// mixed precision: bfloat16 activations, float32 parameters, gradients and Adam moments.
// --profile FILE profiles steps after the timed ones (--profile-warmup more, then
// --profile-steps profiled; see examples/common/step_profile.h): the trace in FILE, the table
// in FILE with .csv and on stderr.

#include <normgrad/normgrad.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "common/step_profile.h"
#include "convpool_cnn_c/model.h"
#include "process_memory.h"
#include "training_models.h"

namespace {

using namespace normgrad;
using normgrad::bench::peak_resident_bytes;
using normgrad::bench::resident_bytes;

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Times training steps of the GRU language model or ConvPool-CNN-C"};
  std::string model_name = "gru", norm = "none";
  int steps = 5, warmup = 2;
  std::int64_t batch = 0;
  std::string device_name = "cpu";
  app.add_option("--device", device_name, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--model", model_name, "gru or cnn")->check(CLI::IsMember({"gru", "cnn"}));
  app.add_option("--norm", norm, "a norm spec for every norm slot (none, layernorm, rmsnorm, ...)");
  app.add_option("--steps", steps, "timed steps")->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "untimed steps first")->check(CLI::NonNegativeNumber);
  app.add_option("--batch", batch, "batch size (default: 80 sentences for gru, 64 images for cnn)");
  bool use_graph = false;
  app.add_flag("--graph", use_graph,
               "replay whole steps as a CUDA graph (needs --device cuda, --warmup >= 1)");
  std::string conv = "columns";
  app.add_option("--conv", conv, "how CUDA convolutions multiply: columns or implicit (GEMM)")
      ->check(CLI::IsMember({"columns", "implicit"}));
  std::string precision = "float32";
  app.add_option("--precision", precision,
                 "float32, or bfloat16 (mixed precision: bfloat16 activations)")
      ->check(CLI::IsMember({"float32", "bfloat16"}));
  examples::ProfileFlags profile;
  examples::add_profile_flags(&app, profile);
  CLI11_PARSE(app, argc, argv);
  cuda::set_conv_algorithm(conv == "implicit" ? cuda::ConvAlgorithm::ImplicitGemm
                                              : cuda::ConvAlgorithm::Columns);
  if (conv == "implicit" && device_name != "cuda") {
    std::cerr << "bench_training_step: --conv implicit needs --device cuda\n";
    return 2;
  }
  if (use_graph && (device_name != "cuda" || warmup < 1)) {
    std::cerr << "bench_training_step: --graph needs --device cuda and at least one warm-up step\n";
    return 2;
  }

  try {
    const std::int64_t rss_before = resident_bytes();
    const Device device = device_name == "cuda" ? Device::cuda() : Device::cpu();
    Generator data(1);
    std::function<Tensor()> loss;
    std::shared_ptr<nn::Module> model;
    if (model_name == "gru") {
      // Batch 80, 50 steps, embedding 256, hidden 512, vocabulary 8000.
      const std::int64_t sentences = batch > 0 ? batch : 80, length = 50, vocabulary = 8000;
      auto lm = std::make_shared<bench::GruLanguageModel>(vocabulary, 256, 512, norm);
      lm->activations = precision == "bfloat16" ? DType::BFloat16 : DType::Float32;
      lm->to(device);
      const Tensor tokens = randint(0, vocabulary, {length, sentences}, data).to(device);
      const Tensor targets = randint(0, vocabulary, {length, sentences}, data).to(device);
      loss = [lm, tokens, targets] { return lm->loss(tokens, targets); };
      model = lm;
    } else {
      const std::int64_t images = batch > 0 ? batch : 64;
      auto cnn = std::make_shared<convpool_cnn_c::ConvPoolCnnC>(convpool_cnn_c::ModelConfig{
          .norm = norm, .input_channels = 3, .width = 1.0, .precision = precision});
      cnn->to(device);
      const Tensor x = randn({images, 3, 32, 32}, data).to(device);
      const Tensor labels = randint(0, 10, {images}, data).to(device);
      cnn->initialise_from_data(x);
      loss = [cnn, x, labels] { return nn::cross_entropy(cnn->forward(x), labels); };
      model = cnn;
    }
    optim::Adam adam(model->parameters(), {.lr = 1e-4, .capturable = use_graph});
    const auto training_step = [&] {
      adam.zero_grad();
      loss().backward();
      adam.step();
    };
    std::unique_ptr<cuda::Graph> graph;
    std::vector<double> times;
    for (int step = 0; step < warmup + steps; ++step) {
      if (use_graph && step == warmup) {  // after the eager warm-up steps
        graph = std::make_unique<cuda::Graph>(device.index);
        graph->capture(training_step);
      }
      const auto start = std::chrono::steady_clock::now();
      if (graph)
        graph->replay();
      else
        training_step();
      if (device.is_cuda()) cuda::synchronize(device.index);
      const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
      if (step >= warmup) times.push_back(elapsed.count());
    }
    // The profile's steps come after the timed ones, whose times they leave alone.
    examples::StepProfile step_profile(profile, *model, "bench_training_step", stderr);
    while (!step_profile.done()) {
      if (graph)
        graph->replay();
      else
        training_step();
      step_profile.step_finished();
    }
    std::vector<double> sorted = times;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted.size() % 2
                              ? sorted[sorted.size() / 2]
                              : (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]) / 2;
    std::cout << R"({"framework":"normgrad","model":")" << model_name << R"(","norm":")" << norm
              << R"(","device":")" << device << R"(","conv":")" << conv << R"(","precision":")"
              << precision << R"(","graph":)" << (use_graph ? "true" : "false") << R"(,"threads":)"
              << get_num_threads() << R"(,"step_seconds":[)";
    for (std::size_t i = 0; i < times.size(); ++i) std::cout << (i ? "," : "") << times[i];
    std::cout << R"(],"median_seconds":)" << median << R"(,"peak_tensor_bytes":)"
              << memory_stats(device).peak_allocated_bytes << R"(,"peak_rss_growth_bytes":)"
              << peak_resident_bytes() - rss_before << "}\n";
  } catch (const Error& error) {
    std::cerr << "bench_training_step: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
