// One recurrent time step, forward and backward, as a layer runs it: the state side's GEMM
// (W_hh h + b_hh) and then the pointwise step, with gradients for the input side, the previous
// state, W_hh, b_hh and the norms' gains and biases. For a GRU (--cell gru) or an LSTM (--cell
// lstm), three ways, timed in alternating rounds:
//   plain            no norm: the GEMM and the fused step kernel (normgrad::gru_step or
//                    normgrad::lstm_step without norms);
//   <norm> fused     the norms inside the step's kernel (normgrad::normed_gru_step or
//                    normgrad::lstm_step), what cells with LayerNorm, RMSNorm, pRMSNorm or L2Norm
//                    run;
//   <norm> separate  the norms as kernels of their own around the step's: a GRU's split, two
//                    norms, cat and gate kernel; an LSTM's norm, add, cell-state kernel, sigmoid,
//                    norm, tanh and product. This is how the cells ran before the fused steps.
// For each it prints the median time per step over the rounds and the median over rounds of its
// ratio to the plain step of the same round; --json prints one JSON line per step instead.
//
//   bench_recurrent_step [--cell gru|lstm] [--device cpu|cuda] [--batch 80] [--hidden 512]
//                        [--rounds 7] [--min-time 0.2] [--quick] [--json]

#include <normgrad/normgrad.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
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

// The leaves of one step, on the device: what a recurrent layer's step reads and differentiates.
struct StepInputs {
  Tensor gx, h, c, weight, bias, upstream;
};

StepInputs make_inputs(std::int64_t gates, std::int64_t batch, std::int64_t hidden, Device device) {
  Generator generator(1);
  const auto leaf = [&](const Shape& shape, double scale) {
    return (randn(shape, generator) * scale).to(device).detach().requires_grad_();
  };
  const double init = 1.0 / std::sqrt(static_cast<double>(hidden));
  return {leaf({batch, gates * hidden}, 1.0), leaf({batch, hidden}, 1.0),
          leaf({batch, hidden}, 1.0),         leaf({gates * hidden, hidden}, init),
          leaf({gates * hidden}, init),       randn({batch, 2 * hidden}, generator).to(device)};
}

// A norm over `features` values in the form the fused steps take, from a module as cells
// build it.
normgrad::RowNorm row_norm_of(const std::string& spec, std::int64_t features, Device device) {
  const auto module = nn::make_norm(nn::NormSpec::parse(spec), features);
  module->to(device);
  return *module->row_form();
}

// Runs backward from the step's output (upstream's first columns for a GRU's h, all of it for
// an LSTM's [h | c]) and drops every gradient, so that each call does the same work.
void backward_and_clear(const Tensor& out, const StepInputs& in,
                        const std::vector<normgrad::RowNorm>& norms) {
  out.backward(in.upstream.narrow(1, 0, out.size(1)));
  for (Tensor t : {in.gx, in.h, in.c, in.weight, in.bias}) t.zero_grad();
  for (const normgrad::RowNorm& norm : norms)
    for (Tensor t : {norm.gain, norm.bias})
      if (t.defined()) t.zero_grad();
}

void gru_cases(std::vector<StepCase>& cases, const StepInputs& in, std::int64_t hidden,
               const std::vector<std::string>& specs, Device device) {
  cases.push_back({"plain", [&in] {
                     const Tensor gh = nn::functional::linear(in.h, in.weight, in.bias);
                     backward_and_clear(normgrad::gru_step(in.gx, gh, in.h), in, {});
                   }});
  for (const std::string& spec : specs) {
    const normgrad::GruStateNorms norms{row_norm_of(spec, 2 * hidden, device),
                                              row_norm_of(spec, hidden, device)};
    const std::vector<normgrad::RowNorm> parameters = {norms.gates, norms.candidate};
    cases.push_back({spec + " fused", [&in, norms, parameters] {
                       const Tensor gh = nn::functional::linear(in.h, in.weight, in.bias);
                       backward_and_clear(normgrad::normed_gru_step(in.gx, gh, in.h, norms),
                                          in, parameters);
                     }});
    cases.push_back(
        {spec + " separate", [&in, norms, parameters, hidden] {
           const Tensor gh = nn::functional::linear(in.h, in.weight, in.bias);
           const std::vector<Tensor> blocks = split(gh, {2 * hidden, hidden}, -1);
           const Tensor normalised = cat({normgrad::row_norm(blocks[0], norms.gates),
                                          normgrad::row_norm(blocks[1], norms.candidate)},
                                         -1);
           backward_and_clear(normgrad::gru_step(in.gx, normalised, in.h), in, parameters);
         }});
  }
}

void lstm_cases(std::vector<StepCase>& cases, const StepInputs& in, std::int64_t hidden,
                const std::vector<std::string>& specs, Device device) {
  cases.push_back({"plain", [&in] {
                     const Tensor gh = nn::functional::linear(in.h, in.weight, in.bias);
                     const auto state = normgrad::lstm_step(in.gx, gh, in.h, in.c, {});
                     backward_and_clear(cat({state[0], state[1]}, 1), in, {});
                   }});
  for (const std::string& spec : specs) {
    const normgrad::LstmStepNorms norms{row_norm_of(spec, 4 * hidden, device),
                                              row_norm_of(spec, hidden, device)};
    const std::vector<normgrad::RowNorm> parameters = {*norms.state, *norms.cell};
    cases.push_back({spec + " fused", [&in, norms, parameters] {
                       const Tensor gh = nn::functional::linear(in.h, in.weight, in.bias);
                       const auto state = normgrad::lstm_step(in.gx, gh, in.h, in.c, norms);
                       backward_and_clear(cat({state[0], state[1]}, 1), in, parameters);
                     }});
    cases.push_back({spec + " separate", [&in, norms, parameters, hidden] {
                       const Tensor gh = nn::functional::linear(in.h, in.weight, in.bias);
                       const Tensor gates = in.gx + normgrad::row_norm(gh, *norms.state);
                       const Tensor c = normgrad::lstm_cell_state(gates, in.c);
                       const Tensor h = sigmoid(gates.narrow(1, 3 * hidden, hidden)) *
                                        tanh(normgrad::row_norm(c, *norms.cell));
                       backward_and_clear(cat({h, c}, 1), in, parameters);
                     }});
  }
}

void print_json(const std::string& cell, const std::string& name, std::int64_t batch,
                std::int64_t hidden, const std::vector<double>& seconds, double ratio) {
  std::cout << R"({"cell":")" << cell << R"(","name":")" << name << R"(","batch":)" << batch
            << R"(,"hidden":)" << hidden << R"(,"median_seconds":)" << bench::median(seconds)
            << R"(,"cv":)" << bench::coefficient_of_variation(seconds) << R"(,"ratio_to_plain":)"
            << ratio << "}" << std::endl;
}

int run(const bench::Settings& settings, const std::string& cell, std::int64_t batch,
        std::int64_t hidden, bool json) {
  const bool lstm = cell == "lstm";
  const StepInputs in = make_inputs(lstm ? 4 : 3, batch, hidden, settings.device);
  const std::vector<std::string> specs = {"layernorm", "rmsnorm", "prmsnorm:0.0625"};
  std::vector<StepCase> cases;
  if (lstm)
    lstm_cases(cases, in, hidden, specs, settings.device);
  else
    gru_cases(cases, in, hidden, specs, settings.device);

  std::vector<int> calls;
  for (StepCase& c : cases) calls.push_back(bench::calls_per_batch(c.step, settings));
  // Rounds alternate the cases, so a slow spell of a shared machine falls on all of them.
  for (int round = 0; round < settings.repetitions; ++round)
    for (std::size_t i = 0; i < cases.size(); ++i)
      cases[i].seconds.push_back(bench::seconds_per_call(cases[i].step, calls[i], settings.device));

  if (!json) {
    std::printf("%s step forward + backward, batch %lld, hidden %lld, on %s (%d rounds)\n",
                lstm ? "LSTM" : "GRU", static_cast<long long>(batch),
                static_cast<long long>(hidden), settings.device.str().c_str(),
                settings.repetitions);
    std::printf("%-26s %12s %8s %16s\n", "step", "median ms", "cv", "÷ plain (median)");
  }
  for (const StepCase& c : cases) {
    std::vector<double> ratios;
    for (std::size_t r = 0; r < c.seconds.size(); ++r)
      ratios.push_back(c.seconds[r] / cases[0].seconds[r]);
    const double ratio = bench::median(ratios);
    if (json)
      print_json(cell, c.name, batch, hidden, c.seconds, ratio);
    else
      std::printf("%-26s %12.4f %8.3f %15.3fx\n", c.name.c_str(), 1e3 * bench::median(c.seconds),
                  bench::coefficient_of_variation(c.seconds), ratio);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Times one GRU or LSTM step, forward and backward: plain, with its norms fused into the "
      "step's kernel, and with them as separate kernels"};
  std::string device_name = "cpu", cell = "gru";
  std::int64_t batch = 80, hidden = 512;
  int rounds = 7;
  double min_time = 0.2;
  bool quick = false, json = false;
  app.add_option("--cell", cell, "gru or lstm")->check(CLI::IsMember({"gru", "lstm"}));
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
      throw Error("bench_recurrent_step: --device cuda, but no CUDA device is available");
    return run({device, rounds, min_time}, cell, batch, hidden, json);
  } catch (const Error& error) {
    std::cerr << "bench_recurrent_step: " << error.what() << "\n";
    return 1;
  }
}
