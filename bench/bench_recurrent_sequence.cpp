// A GRU or LSTM layer's forward and backward over a whole sequence, two ways, timed in
// alternating rounds:
//   sequence  the layer as it runs: each direction's loop as one op (normgrad::gru_sequence,
//             lstm_sequence), W_hh's gradient one product over all the rows the steps computed;
//   stepped   the same layer with its cells stepped through autograd one step at a time (each
//             step's state-side product, then its fused step), as the layer ran before: W_hh's
//             gradient T thin products added up.
// With --lengths the batch has sequences of different lengths and both run packed
// (forward_lengths), each step computing only the sequences still going. Both compute the same
// values (the tests hold them bit for bit); gradients for the input, W_ih, W_hh, both biases
// and the norms' gains and biases. It prints each case's median time per forward + backward
// and the median over rounds of stepped / sequence.
//
//   bench_recurrent_sequence [--device cpu|cuda] [--cell gru|lstm] [--norms none,rmsnorm]
//                            [--lengths] [--batch 80] [--steps 50] [--input 512]
//                            [--hidden 512] [--rounds 7] [--min-time 0.5] [--quick]

#include <normgrad/normgrad.h>

#include <CLI/CLI.hpp>
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

// A cell that never runs its loop as one op, so that its layer steps it.
template <class Cell> class Stepped : public Cell {
 public:
  using Cell::Cell;
  std::optional<std::vector<Tensor>> run_sequence(const Tensor&, const std::vector<Tensor>&,
                                                  const normgrad::SequenceOptions&) override {
    return std::nullopt;
  }
};

// A one-direction layer of `Cell`s, its parameters drawn from a generator seeded alike.
template <class Cell>
std::shared_ptr<nn::Recurrent> layer(std::int64_t input, std::int64_t hidden,
                                     const std::string& norm, Device device) {
  auto generator = std::make_shared<Generator>(2);
  auto result = std::make_shared<nn::Recurrent>(
      [=] {
        return std::make_shared<Cell>(input, hidden, nn::RecurrentCellOptions{.norm = norm},
                                      *generator);
      },
      nn::RecurrentOptions{});
  result->to(device);
  return result;
}

struct Case {
  std::string norm;
  std::function<void()> sequence = {}, stepped = {};
  std::vector<double> sequence_seconds = {}, stepped_seconds = {};
};

// The layer's input, its lengths (undefined: all full) and the gradient it gets, on the device.
struct Data {
  Tensor x, lengths, upstream;
};

std::function<void()> forward_backward(std::shared_ptr<nn::Recurrent> recurrent, const Data& data) {
  return [recurrent, data] {
    recurrent->zero_grad();
    const nn::RecurrentOutput out = data.lengths.defined()
                                        ? recurrent->forward_lengths(data.x, data.lengths)
                                        : recurrent->forward(data.x);
    out.output.backward(data.upstream);
  };
}

Case make_case(const std::string& cell, const std::string& norm, const Data& data,
               std::int64_t input, std::int64_t hidden, Device device) {
  Case c{norm};
  if (cell == "gru") {
    c.sequence = forward_backward(layer<nn::GruCell>(input, hidden, norm, device), data);
    c.stepped = forward_backward(layer<Stepped<nn::GruCell>>(input, hidden, norm, device), data);
  } else {
    c.sequence = forward_backward(layer<nn::LstmCell>(input, hidden, norm, device), data);
    c.stepped = forward_backward(layer<Stepped<nn::LstmCell>>(input, hidden, norm, device), data);
  }
  return c;
}

int run(const bench::Settings& settings, const std::string& cell,
        const std::vector<std::string>& norms, bool with_lengths, std::int64_t batch,
        std::int64_t steps, std::int64_t input, std::int64_t hidden) {
  Generator generator(1);
  Data data{randn({steps, batch, input}, generator).to(settings.device), Tensor(),
            randn({steps, batch, hidden}, generator).to(settings.device)};
  if (with_lengths)  // uniform on [T/2, T], as a batch of sentences of similar lengths
    data.lengths = randint(steps - steps / 2, steps + 1, {batch}, generator);
  std::vector<Case> cases;
  for (const std::string& norm : norms)
    cases.push_back(make_case(cell, norm, data, input, hidden, settings.device));
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
      "%s layer forward + backward, %lld steps%s, batch %lld, input %lld, hidden %lld, "
      "on %s (%d rounds)\n",
      cell == "gru" ? "GRU" : "LSTM", static_cast<long long>(steps),
      with_lengths ? " (lengths from T/2 to T, packed)" : "", static_cast<long long>(batch),
      static_cast<long long>(input), static_cast<long long>(hidden), settings.device.str().c_str(),
      settings.repetitions);
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
      "Times a GRU or LSTM layer's forward and backward over a sequence: each direction's loop "
      "as one op, against the same cells stepped through autograd"};
  std::string device_name = "cpu", cell = "gru";
  std::vector<std::string> norms = {"none", "rmsnorm"};
  bool with_lengths = false;
  std::int64_t batch = 80, steps = 50, input = 512, hidden = 512;
  int rounds = 7;
  double min_time = 0.5;
  bool quick = false;
  app.add_option("--device", device_name, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--cell", cell, "gru or lstm")->check(CLI::IsMember({"gru", "lstm"}));
  app.add_option("--norms", norms, "norm specs of the layers to time")->delimiter(',');
  app.add_flag("--lengths", with_lengths,
               "sequences of lengths drawn from [T/2, T], run packed (forward_lengths)");
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
    return run({device, rounds, min_time}, cell, norms, with_lengths, batch, steps, input, hidden);
  } catch (const Error& error) {
    std::cerr << "bench_recurrent_sequence: " << error.what() << "\n";
    return 1;
  }
}
