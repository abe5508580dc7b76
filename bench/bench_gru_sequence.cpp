// A GRU layer's forward and backward over a whole sequence, two ways, timed in alternating
// rounds:
//   sequence  the layer as it runs: each direction's loop as one op (functional::gru_sequence),
//             W_hh's gradient one product over all T B rows;
//   stepped   the same cell stepped through autograd one step at a time (its input side, then
//             each step's state-side product and fused step), as the layer ran before: W_hh's
//             gradient T thin products added up.
// Both compute the same values (the tests hold them bit for bit); gradients for the input, W_ih,
// W_hh, both biases and the norms' gains and biases. It prints each case's median time per
// forward + backward and the median over rounds of stepped / sequence.
//
//   bench_gru_sequence [--device cpu|cuda] [--norms none,rmsnorm] [--batch 80] [--steps 50]
//                      [--input 512] [--hidden 512] [--rounds 7] [--min-time 0.5] [--quick]

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

struct Case {
  std::string norm;
  std::function<void()> sequence = {}, stepped = {};
  std::vector<double> sequence_seconds = {}, stepped_seconds = {};
};

// The layer's input and the gradient it gets, on the device.
struct Data {
  Tensor x, upstream;
};

Case make_case(const std::string& norm, const Data& data, std::int64_t input, std::int64_t hidden,
               Device device) {
  Generator init(2);
  auto gru =
      std::make_shared<nn::Gru>(input, hidden, nn::RecurrentOptions{.cell = {.norm = norm}}, init);
  gru->to(device);
  Case c{norm};
  c.sequence = [gru, data] {
    gru->zero_grad();
    gru->forward(data.x).output.backward(data.upstream);
  };
  c.stepped = [gru, data, hidden] {
    gru->zero_grad();
    auto& cell = static_cast<nn::GruCell&>(gru->cell(0));
    const std::vector<Tensor> sides = unbind(cell.input_side(data.x), 0);
    std::vector<Tensor> states;
    Tensor h = zeros({data.x.size(1), hidden}, {.device = data.x.device()});
    for (const Tensor& side : sides) {
      h = cell.step(side, {h}, Tensor())[0];
      states.push_back(h);
    }
    stack(states, 0).backward(data.upstream);
  };
  return c;
}

int run(const bench::Settings& settings, const std::vector<std::string>& norms, std::int64_t batch,
        std::int64_t steps, std::int64_t input, std::int64_t hidden) {
  Generator generator(1);
  const Data data{randn({steps, batch, input}, generator).to(settings.device),
                  randn({steps, batch, hidden}, generator).to(settings.device)};
  std::vector<Case> cases;
  for (const std::string& norm : norms)
    cases.push_back(make_case(norm, data, input, hidden, settings.device));
  std::vector<int> calls;
  for (const Case& c : cases) {
    calls.push_back(bench::calls_per_batch(c.sequence, settings));
    calls.push_back(bench::calls_per_batch(c.stepped, settings));
  }
  // Rounds alternate the cases, so a slow spell of a shared machine falls on all of them.
  for (int round = 0; round < settings.repetitions; ++round)
    for (std::size_t i = 0; i < cases.size(); ++i) {
      Case& c = cases[i];
      c.sequence_seconds.push_back(
          bench::seconds_per_call(c.sequence, calls[2 * i], settings.device));
      c.stepped_seconds.push_back(
          bench::seconds_per_call(c.stepped, calls[2 * i + 1], settings.device));
    }

  std::printf(
      "GRU layer forward + backward, %lld steps, batch %lld, input %lld, hidden %lld, "
      "on %s (%d rounds)\n",
      static_cast<long long>(steps), static_cast<long long>(batch), static_cast<long long>(input),
      static_cast<long long>(hidden), settings.device.str().c_str(), settings.repetitions);
  std::printf("%-14s %14s %8s %14s %8s %20s\n", "norm", "sequence ms", "cv", "stepped ms", "cv",
              "stepped ÷ sequence");
  for (const Case& c : cases) {
    std::vector<double> ratios;
    for (std::size_t r = 0; r < c.sequence_seconds.size(); ++r)
      ratios.push_back(c.stepped_seconds[r] / c.sequence_seconds[r]);
    std::printf("%-14s %14.3f %8.3f %14.3f %8.3f %19.3fx\n", c.norm.c_str(),
                1e3 * bench::median(c.sequence_seconds),
                bench::coefficient_of_variation(c.sequence_seconds),
                1e3 * bench::median(c.stepped_seconds),
                bench::coefficient_of_variation(c.stepped_seconds), bench::median(ratios));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Times a GRU layer's forward and backward over a sequence: each direction's loop as one op, "
      "against the same cell stepped through autograd"};
  std::string device_name = "cpu";
  std::vector<std::string> norms = {"none", "rmsnorm"};
  std::int64_t batch = 80, steps = 50, input = 512, hidden = 512;
  int rounds = 7;
  double min_time = 0.5;
  bool quick = false;
  app.add_option("--device", device_name, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--norms", norms, "norm specs of the layers to time")->delimiter(',');
  app.add_option("--batch", batch, "sequences")->check(CLI::PositiveNumber);
  app.add_option("--steps", steps, "time steps T")->check(CLI::PositiveNumber);
  app.add_option("--input", input, "input features")->check(CLI::PositiveNumber);
  app.add_option("--hidden", hidden, "units H")->check(CLI::PositiveNumber);
  app.add_option("--rounds", rounds, "timed rounds")->check(CLI::PositiveNumber);
  app.add_option("--min-time", min_time, "seconds per case in each round")
      ->check(CLI::PositiveNumber);
  app.add_flag("--quick", quick, "small sizes, 2 short rounds: a check of the program");
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    rounds = 2;
    min_time = 0.01;
    batch = 4;
    steps = 5;
    input = hidden = 16;
  }
  try {
    for (const std::string& norm : norms) (void)nn::NormSpec::parse(norm);
    const Device device = device_name == "cuda" ? Device::cuda() : Device::cpu();
    if (device.is_cuda() && !cuda::is_available())
      throw Error("--device cuda, but no CUDA device is available");
    return run({device, rounds, min_time}, norms, batch, steps, input, hidden);
  } catch (const Error& error) {
    std::cerr << "bench_gru_sequence: " << error.what() << "\n";
    return 1;
  }
}
