#pragma once
// Batched beam search over any StepDecoder (step_decoder.h), in the manner of Nematus, Marian
// and fairseq.
//
//   decoding::BeamSearchOptions options{.beam_size = 5, .n_best = 3, .bos = 1, .eos = 2,
//                                       .length_penalty = decoding::LengthPenalty::Gnmt};
//   my_decoder.start(sources);                     // B rows, one per source sentence
//   auto results = decoding::beam_search(my_decoder, source_lengths, options);
//   results[s][0].tokens                           // the best translation of sentence s
//
// The search, step t = 1, 2, ...:
//   * every live row is fed its last token (bos at t = 1) and the decoder returns log P(y_t);
//   * for each sentence, the extensions of its live hypotheses are ranked by total
//     log-probability (all have length t, so the length penalty would not change the order);
//     eos extensions among the first k are finished and set aside, and the first k extensions
//     that are not eos stay live. So the beam keeps k live hypotheses while it finishes others
//     (fairseq's rule), and k = 1 is exactly greedy decoding;
//   * at t = max_length(s) the first extensions are finished whether they end in eos or not;
//   * a sentence is done when it holds k finished hypotheses (the standard stopping rule: no
//     bound on what a live hypothesis could still reach is used), at its maximum length, or
//     when nothing is left to extend. Its rows are then dropped, so it costs nothing more.
// The first step runs on the B rows as given; the first reorder expands them to up to B k.
// reorder is called only when the rows change (not at all for greedy decoding, until a
// sentence is done). Rows stay grouped by sentence, in sentence order.
//
// Ties are broken deterministically and the same way for a sentence in any batch: extensions
// by total log-probability, then by the rank of the hypothesis they extend, then by token id;
// finished hypotheses by score, then by the order in which they finished.
//
// The decoder may compute on the CPU or on CUDA; each step's [rows, V] output is copied to
// the host once (a no-op on the CPU), and only the k + 1 best tokens of each row are looked at
// closely (top_tokens.h). The decoder's calls run under NoGradGuard.

#include <cstdint>
#include <vector>

#include "decoding/length_penalty.h"
#include "decoding/step_decoder.h"

namespace normgrad::decoding {

struct BeamSearchOptions {
  std::int64_t beam_size = 5;  // k >= 1; 1 is greedy decoding
  std::int64_t n_best = 1;     // hypotheses returned per sentence, 1 <= n_best <= k
  std::int64_t bos = -1;       // fed at the first step; must be set, in [0, V)
  std::int64_t eos = -1;       // ends a hypothesis; must be set, in [0, V)
  LengthPenalty length_penalty = LengthPenalty::None;
  double alpha = 0.6;  // the exponent of LengthPenalty::Gnmt, >= 0
  // max_length(s) = floor(max_length_a * source_length(s) + max_length_b) tokens, eos
  // included (fairseq's max_len_a and max_len_b, and its defaults); must come to >= 1.
  double max_length_a = 0.0;  // >= 0
  std::int64_t max_length_b = 200;
};

struct Hypothesis {
  std::vector<std::int64_t> tokens;  // the output: without bos, and without eos
  bool ended_with_eos = false;       // false when cut off at the maximum length
  double log_prob = 0;               // sum of log P over the |Y| tokens, eos included
  double score = 0;                  // log_prob with the length penalty applied
  // |Y|, the length the penalty uses: the tokens, plus one for eos.
  std::int64_t length() const {
    return static_cast<std::int64_t>(tokens.size()) + (ended_with_eos ? 1 : 0);
  }
};

// The maximum length of a sentence of `source_length` tokens under `options`.
std::int64_t max_length(const BeamSearchOptions& options, std::int64_t source_length);

// Decodes B = source_lengths.size() sentences whose state `decoder` holds as B rows. Returns,
// per sentence, its n-best list: min(n_best, finished) hypotheses (at least one), best score
// first. Throws Error naming beam_search for invalid options, an empty batch, or a step
// output of the wrong shape, dtype or device, or holding NaN.
std::vector<std::vector<Hypothesis>> beam_search(StepDecoder& decoder,
                                                 const std::vector<std::int64_t>& source_lengths,
                                                 const BeamSearchOptions& options);

}  // namespace normgrad::decoding
