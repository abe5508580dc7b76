// Beam search's own cost: the share of decoding time spent outside the model.
//
// A GRU decoder the size of bench_training_step's language model (embedding 256, hidden 512,
// vocabulary 8000, float32, random weights) decodes a batch of 80 sentences. One step embeds
// the previous tokens, runs one GruCell step, projects to V logits and takes log_softmax:
// [400, 8000] at k = 5. The decoder is wrapped so that the time spent inside its step() and
// reorder() is summed (model_s); the rest of beam_search's wall time (search_s) is the
// search's own work: token and row tensors, the output checks, each row's k + 1 best tokens,
// ranking the extensions, keeping hypotheses. overhead_pct = 100 search_s / total. Source
// lengths are 10 ... 40 (10 + 7i mod 31), maximum lengths floor(1.2 src + 5), 17 ... 53
// tokens; with random weights eos is seldom among the best, so most hypotheses run to their
// sentence's maximum, whose rows then drop out. Cases: k = 5 (the target: overhead < 10%) and
// k = 1 (greedy). One decode per repetition; run with --benchmark_repetitions=5 for medians.

#include <chrono>
#include <vector>

#include "bench_common.h"
#include "decoding/beam_search.h"

namespace {

using normgrad::Tensor;
namespace decoding = normgrad::decoding;
namespace nn = normgrad::nn;
using Clock = std::chrono::steady_clock;

constexpr std::int64_t vocabulary = 8000, embedding_size = 256, hidden = 512, batch = 80;
constexpr std::int64_t eos = 0, bos = 1;

class GruDecoder : public decoding::StepDecoder {
 public:
  GruDecoder()
      : embedding_(vocabulary, embedding_size),
        cell_(embedding_size, hidden),
        output_(hidden, vocabulary) {}
  void start() {
    normgrad::Generator generator(11);
    state_ = normgrad::randn({batch, hidden}, generator);
  }
  std::int64_t vocab_size() const override { return vocabulary; }
  normgrad::Device device() const override { return state_.device(); }
  Tensor step(const Tensor& previous) override {
    state_ = cell_.forward(embedding_.forward(previous), state_);
    return normgrad::log_softmax(output_.forward(state_), 1);
  }
  void reorder(const Tensor& rows) override { state_ = normgrad::index_select(state_, 0, rows); }

 private:
  nn::Embedding embedding_;
  nn::GruCell cell_;
  nn::Linear output_;
  Tensor state_;
};

// Sums the time spent inside another decoder's calls.
class TimedDecoder : public decoding::StepDecoder {
 public:
  explicit TimedDecoder(decoding::StepDecoder& inner) : inner_(inner) {}
  std::int64_t vocab_size() const override { return inner_.vocab_size(); }
  normgrad::Device device() const override { return inner_.device(); }
  Tensor step(const Tensor& previous) override {
    const auto start = Clock::now();
    Tensor log_probs = inner_.step(previous);
    seconds += std::chrono::duration<double>(Clock::now() - start).count();
    rows += previous.size(0);
    return log_probs;
  }
  void reorder(const Tensor& new_rows) override {
    const auto start = Clock::now();
    inner_.reorder(new_rows);
    seconds += std::chrono::duration<double>(Clock::now() - start).count();
  }
  double seconds = 0;
  std::int64_t rows = 0;  // summed over steps

 private:
  decoding::StepDecoder& inner_;
};

void decode(benchmark::State& state) {
  const std::int64_t beam_size = state.range(0);
  std::vector<std::int64_t> source_lengths;
  for (std::int64_t i = 0; i < batch; ++i) source_lengths.push_back(10 + 7 * i % 31);
  const decoding::BeamSearchOptions options{.beam_size = beam_size,
                                            .n_best = 1,
                                            .bos = bos,
                                            .eos = eos,
                                            .max_length_a = 1.2,
                                            .max_length_b = 5};
  normgrad::NoGradGuard no_grad;
  GruDecoder model;
  double model_seconds = 0, total_seconds = 0;
  std::int64_t rows = 0;
  for (auto _ : state) {
    model.start();
    TimedDecoder timed(model);
    const auto start = Clock::now();
    const auto results = decoding::beam_search(timed, source_lengths, options);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    benchmark::DoNotOptimize(results.data());
    state.SetIterationTime(seconds);
    total_seconds += seconds;
    model_seconds += timed.seconds;
    rows += timed.rows;
  }
  const double iterations = static_cast<double>(state.iterations());
  state.counters["model_s"] = model_seconds / iterations;
  state.counters["search_s"] = (total_seconds - model_seconds) / iterations;
  state.counters["overhead_pct"] = 100 * (total_seconds - model_seconds) / total_seconds;
  state.counters["row_steps"] = static_cast<double>(rows) / iterations;
}

}  // namespace

int main(int argc, char** argv) {
  for (const std::int64_t k : {5, 1})
    benchmark::RegisterBenchmark("beam_search/batch80", decode)
        ->Arg(k)
        ->ArgName("k")
        ->Iterations(1)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  return normgrad::bench::run_benchmark_main(argc, argv);
}
