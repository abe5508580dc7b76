#include "decoding/beam_search.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "autograd/grad_mode.h"
#include "base/error.h"
#include "decoding/sentence_beam.h"
#include "decoding/top_tokens.h"

namespace normgrad::decoding {
namespace {

constexpr const char* op = "beam_search";

// Everything that can be checked before the decoder is called.
void check_arguments(const BeamSearchOptions& options, std::int64_t vocab,
                     const std::vector<std::int64_t>& source_lengths) {
  NG_CHECK(!source_lengths.empty(), op, "empty batch: no source lengths given");
  NG_CHECK(options.beam_size >= 1, op, "beam_size must be >= 1, got ", options.beam_size);
  NG_CHECK(options.n_best >= 1 && options.n_best <= options.beam_size, op,
           "n_best must lie in [1, beam_size = ", options.beam_size, "], got ", options.n_best);
  NG_CHECK(vocab >= 1, op, "the decoder's vocab_size() must be >= 1, got ", vocab);
  NG_CHECK(options.bos >= 0 && options.bos < vocab, op, "bos ", options.bos,
           " is outside the vocabulary [0, ", vocab, ")");
  NG_CHECK(options.eos >= 0 && options.eos < vocab, op, "eos ", options.eos,
           " is outside the vocabulary [0, ", vocab, ")");
  NG_CHECK(std::isfinite(options.max_length_a) && options.max_length_a >= 0, op,
           "max_length_a (the ratio to the source length) must be finite and >= 0, got ",
           options.max_length_a);
  NG_CHECK(std::isfinite(options.alpha) && options.alpha >= 0, op,
           "alpha (the exponent of the GNMT length penalty) must be finite and >= 0, got ",
           options.alpha);
  const auto penalty = static_cast<int>(options.length_penalty);
  NG_CHECK(penalty >= 0 && penalty <= static_cast<int>(LengthPenalty::Gnmt), op,
           "unknown length_penalty ", penalty);
  for (std::size_t s = 0; s < source_lengths.size(); ++s) {
    NG_CHECK(source_lengths[s] >= 0, op, "sentence ", s, " has a negative source length ",
             source_lengths[s]);
    const std::int64_t length = max_length(options, source_lengths[s]);
    NG_CHECK(length >= 1, op, "sentence ", s, " (source length ", source_lengths[s],
             ") gets a maximum length of ", length, " = floor(", options.max_length_a, " * ",
             source_lengths[s], " + ", options.max_length_b, "); it must be >= 1");
  }
}

void check_step_output(const Tensor& output, std::int64_t rows, std::int64_t vocab, Device device,
                       std::int64_t step) {
  NG_CHECK(output.defined(), op, "the decoder's step ", step, " returned an undefined tensor");
  NG_CHECK(output.dim() == 2 && output.size(0) == rows && output.size(1) == vocab, op,
           "the decoder's step ", step, " returned log-probabilities of shape ", output.shape(),
           ", expected [", rows, ", ", vocab, "] (rows, vocab_size())");
  NG_CHECK(output.dtype() == DType::Float32 || output.dtype() == DType::Float64, op,
           "the decoder's step ", step, " returned dtype ", output.dtype(),
           ", expected float32 or float64 log-probabilities");
  NG_CHECK(output.device() == device, op, "the decoder's step ", step, " returned a tensor on ",
           output.device(), ", but its device() is ", device);
}

Tensor int64_tensor(const std::vector<std::int64_t>& values, Device device) {
  const Tensor host = from_vector(values, {static_cast<std::int64_t>(values.size())});
  return device.is_cpu() ? host : host.to(device);
}

bool is_identity(const std::vector<std::int64_t>& rows, std::int64_t count) {
  if (static_cast<std::int64_t>(rows.size()) != count) return false;
  for (std::int64_t i = 0; i < count; ++i)
    if (rows[static_cast<std::size_t>(i)] != i) return false;
  return true;
}

// The `count` best tokens of every row of a host [rows, vocab] tensor, row after row. Rows are
// independent, so they are shared among the library's threads (the result does not depend on
// how): a step's output is large (400 x 8000 at k = 5 for 80 sentences), reading it is most
// of the search's own time, and two threads cut that from 52 to 31 ms a decode in
// bench_beam_search.
void top_tokens_of_rows(const Tensor& log_probs, std::int64_t count, std::int64_t step,
                        std::vector<TokenLogProb>& best, std::vector<std::int64_t>& nan_tokens) {
  const std::int64_t rows = log_probs.size(0), vocab = log_probs.size(1);
  best.resize(static_cast<std::size_t>(rows * count));
  nan_tokens.assign(static_cast<std::size_t>(rows), -1);
  const bool single = log_probs.dtype() == DType::Float32;
  const float* floats = single ? log_probs.data_ptr<float>() : nullptr;
  const double* doubles = single ? nullptr : log_probs.data_ptr<double>();
  constexpr std::int64_t parallel_elements = 1 << 16;
#pragma omp parallel for schedule(static) if (rows * vocab >= parallel_elements)
  for (std::int64_t row = 0; row < rows; ++row) {
    TokenLogProb* out = best.data() + row * count;
    nan_tokens[static_cast<std::size_t>(row)] =
        single ? top_tokens(floats + row * vocab, vocab, count, out)
               : top_tokens(doubles + row * vocab, vocab, count, out);
  }
  // Errors after the loop: an exception must not leave an OpenMP region.
  for (std::int64_t row = 0; row < rows; ++row)
    NG_CHECK(nan_tokens[static_cast<std::size_t>(row)] < 0, op, "the decoder's step ", step,
             " returned NaN at row ", row, ", token ", nan_tokens[static_cast<std::size_t>(row)]);
}

}  // namespace

std::int64_t max_length(const BeamSearchOptions& options, std::int64_t source_length) {
  return static_cast<std::int64_t>(
      std::floor(options.max_length_a * static_cast<double>(source_length) +
                 static_cast<double>(options.max_length_b)));
}

std::vector<std::vector<Hypothesis>> beam_search(StepDecoder& decoder,
                                                 const std::vector<std::int64_t>& source_lengths,
                                                 const BeamSearchOptions& options) {
  const std::int64_t vocab = decoder.vocab_size();
  check_arguments(options, vocab, source_lengths);
  const Device device = decoder.device();
  NoGradGuard no_grad;

  std::vector<SentenceBeam> beams;
  beams.reserve(source_lengths.size());
  for (const std::int64_t source_length : source_lengths)
    beams.emplace_back(options, max_length(options, source_length));
  // The sentences that still have rows in the decoder, in row order.
  std::vector<std::int64_t> active(source_lengths.size()), next_active;
  std::iota(active.begin(), active.end(), std::int64_t{0});
  const std::int64_t per_row = std::min(options.beam_size + 1, vocab);

  std::vector<std::int64_t> tokens, rows;
  std::vector<TokenLogProb> best;
  std::vector<std::int64_t> nan_tokens;
  std::vector<Extension> extensions;
  for (std::int64_t step = 1; !active.empty(); ++step) {
    tokens.clear();
    for (const std::int64_t s : active)
      for (std::int64_t rank = 0; rank < beams[s].live_count(); ++rank)
        tokens.push_back(beams[s].last_token(rank, options.bos));
    const auto row_count = static_cast<std::int64_t>(tokens.size());

    const Tensor output = decoder.step(int64_tensor(tokens, device));
    check_step_output(output, row_count, vocab, device, step);
    const Tensor log_probs = (device.is_cpu() ? output : output.to(Device::cpu())).contiguous();
    top_tokens_of_rows(log_probs, per_row, step, best, nan_tokens);

    rows.clear();
    next_active.clear();
    std::int64_t first_row = 0;  // of the current sentence
    for (const std::int64_t s : active) {
      SentenceBeam& beam = beams[s];
      const std::int64_t live = beam.live_count();
      extensions.clear();
      for (std::int64_t rank = 0; rank < live; ++rank)
        for (std::int64_t i = 0; i < per_row; ++i) {
          const TokenLogProb& candidate = best[(first_row + rank) * per_row + i];
          extensions.push_back({beam.live_log_prob(rank) + candidate.log_prob, rank,
                                candidate.log_prob, candidate.token});
        }
      for (const std::int64_t parent : beam.advance(extensions, step))
        rows.push_back(first_row + parent);
      if (!beam.done()) next_active.push_back(s);
      first_row += live;
    }
    active.swap(next_active);
    if (!active.empty() && !is_identity(rows, row_count))
      decoder.reorder(int64_tensor(rows, device));
  }

  std::vector<std::vector<Hypothesis>> results;
  results.reserve(beams.size());
  for (const SentenceBeam& beam : beams) results.push_back(beam.n_best(options.n_best));
  return results;
}

}  // namespace normgrad::decoding
