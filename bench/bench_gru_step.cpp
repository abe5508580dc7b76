// One GRU time step, forward and backward, as a recurrent layer runs it: the state side's GEMM
// (W_hh h + b_hh) and then the pointwise step, with gradients for the input side, the previous
// state, W_hh, b_hh and the norms' gains and biases. Four ways, timed in alternating rounds:
//   plain            no norm: the GEMM and the fused gate kernel (functional::gru_step);
//   <norm> fused     the state norms inside the step's kernel (functional::normed_gru_step),
//                    what GRU cells with LayerNorm, RMSNorm, pRMSNorm or L2Norm now run;
//   <norm> separate  the GEMM, a split, one norm kernel per block, a cat and the gate kernel,
//                    as those cells ran before.
// For each it prints the median time per step over the rounds and the median over rounds of its
// ratio to the plain step of the same round; --json prints one JSON line per step instead.
//
//   bench_gru_step [--device cpu|cuda] [--batch 80] [--hidden 512] [--rounds 7]
//                  [--min-time 0.2] [--quick] [--json]

#include <normgrad/normgrad.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "timing.h"

namespace {

using namespace normgrad;

struct StepCase {
  std::string name;
  std::function<void()> step;
  std::vector<double> seconds = {};  // per step, one entry a round
};

// The leaves of one step, on the device: what a GRU layer's step reads and differentiates.
struct StepInputs {
  Tensor gx, h, weight, bias, upstream;
};

StepInputs make_inputs(std::int64_t batch, std::int64_t hidden, Device device) {
  Generator generator(1);
  const auto leaf = [&](const Shape& shape, double scale) {
    return (randn(shape, generator) * scale).to(device).detach().requires_grad_();
  };
  const double init = 1.0 / std::sqrt(static_cast<double>(hidden));
  return {leaf({batch, 3 * hidden}, 1.0), leaf({batch, hidden}, 1.0),
          leaf({3 * hidden, hidden}, init), leaf({3 * hidden}, init),
          randn({batch, hidden}, generator).to(device)};
}

// The norms of the state side's two blocks, from modules as a GRU cell builds them.
nn::functional::GruStateNorms state_norms(const std::string& norm, std::int64_t hidden,
                                          Device device) {
  const auto gates = nn::make_norm(nn::NormSpec::parse(norm), 2 * hidden);
  const auto candidate = nn::make_norm(nn::NormSpec::parse(norm), hidden);
  gates->to(device);
  candidate->to(device);
  return {*gates->row_form(), *candidate->row_form()};
}

void backward_and_clear(const Tensor& out, const StepInputs& in,
                        const nn::functional::GruStateNorms* norms) {
  out.backward(in.upstream);
  for (Tensor t : {in.gx, in.h, in.weight, in.bias}) t.zero_grad();
  if (norms == nullptr) return;
  for (Tensor t :
       {norms->gates.gain, norms->gates.bias, norms->candidate.gain, norms->candidate.bias})
    if (t.defined()) t.zero_grad();
}

void print_json(const std::string& name, std::int64_t batch, std::int64_t hidden,
                const std::vector<double>& seconds, double ratio) {
  std::cout << R"({"name":")" << name << R"(","batch":)" << batch << R"(,"hidden":)" << hidden
            << R"(,"median_seconds":)" << bench::median(seconds) << R"(,"cv":)"
            << bench::coefficient_of_variation(seconds) << R"(,"ratio_to_plain":)" << ratio << "}"
            << std::endl;
}

int run(const bench::Settings& settings, std::int64_t batch, std::int64_t hidden, bool json) {
  const StepInputs in = make_inputs(batch, hidden, settings.device);
  std::vector<std::string> norms_measured = {"layernorm", "rmsnorm", "prmsnorm:0.0625"};
  std::vector<nn::functional::GruStateNorms> norms;
  for (const std::string& norm : norms_measured)
    norms.push_back(state_norms(norm, hidden, settings.device));

  std::vector<StepCase> cases;
  cases.push_back({"plain", [&] {
                     const Tensor gh = nn::functional::linear(in.h, in.weight, in.bias);
                     backward_and_clear(nn::functional::gru_step(in.gx, gh, in.h), in, nullptr);
                   }});
  for (std::size_t i = 0; i < norms.size(); ++i) {
    const nn::functional::GruStateNorms* n = &norms[i];
    cases.push_back({norms_measured[i] + " fused", [&in, n] {
                       const Tensor gh = nn::functional::linear(in.h, in.weight, in.bias);
                       backward_and_clear(nn::functional::normed_gru_step(in.gx, gh, in.h, *n), in,
                                          n);
                     }});
    cases.push_back(
        {norms_measured[i] + " separate", [&in, n, hidden] {
           const Tensor gh = nn::functional::linear(in.h, in.weight, in.bias);
           const std::vector<Tensor> blocks = split(gh, {2 * hidden, hidden}, -1);
           const Tensor normalised =
               cat({nn::row_norm(blocks[0], n->gates), nn::row_norm(blocks[1], n->candidate)}, -1);
           backward_and_clear(nn::functional::gru_step(in.gx, normalised, in.h), in, n);
         }});
  }
  std::vector<int> calls;
  for (StepCase& c : cases) calls.push_back(bench::calls_per_batch(c.step, settings));
  // Rounds alternate the cases, so a slow spell of a shared machine falls on all of them.
  for (int round = 0; round < settings.repetitions; ++round)
    for (std::size_t i = 0; i < cases.size(); ++i)
      cases[i].seconds.push_back(bench::seconds_per_call(cases[i].step, calls[i], settings.device));

  if (!json)
    std::printf("GRU step forward + backward, batch %lld, hidden %lld, on %s (%d rounds)\n",
                static_cast<long long>(batch), static_cast<long long>(hidden),
                settings.device.str().c_str(), settings.repetitions);
  if (!json) std::printf("%-26s %12s %8s %16s\n", "step", "median ms", "cv", "÷ plain (median)");
  for (const StepCase& c : cases) {
    std::vector<double> ratios;
    for (std::size_t r = 0; r < c.seconds.size(); ++r)
      ratios.push_back(c.seconds[r] / cases[0].seconds[r]);
    const double ratio = bench::median(ratios);
    if (json)
      print_json(c.name, batch, hidden, c.seconds, ratio);
    else
      std::printf("%-26s %12.4f %8.3f %15.3fx\n", c.name.c_str(), 1e3 * bench::median(c.seconds),
                  bench::coefficient_of_variation(c.seconds), ratio);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Times one GRU step, forward and backward: plain, with its state norms fused into the "
      "step's kernel, and with them as separate kernels"};
  std::string device_name = "cpu";
  std::int64_t batch = 80, hidden = 512;
  int rounds = 7;
  double min_time = 0.2;
  bool quick = false, json = false;
  app.add_option("--device", device_name, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--batch", batch, "rows of the step")->check(CLI::PositiveNumber);
  app.add_option("--hidden", hidden, "units H")->check(CLI::PositiveNumber);
  app.add_option("--rounds", rounds, "timed rounds over all the steps")->check(CLI::PositiveNumber);
  app.add_option("--min-time", min_time, "seconds per step in each round")
      ->check(CLI::PositiveNumber);
  app.add_flag("--quick", quick, "2 short rounds: a check of the program, not a measurement");
  app.add_flag("--json", json, "one JSON line per step in place of the table");
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    rounds = 2;
    min_time = 0.01;
  }
  try {
    const Device device = device_name == "cuda" ? Device::cuda() : Device::cpu();
    if (device.is_cuda() && !cuda::is_available())
      throw Error("bench_gru_step: --device cuda, but no CUDA device is available");
    return run({device, rounds, min_time}, batch, hidden, json);
  } catch (const Error& error) {
    std::cerr << "bench_gru_step: " << error.what() << "\n";
    return 1;
  }
}
