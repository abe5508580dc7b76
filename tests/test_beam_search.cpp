// Beam search (decoding/): the best sequence that greedy decoding misses, k = 1 against a
// hand-written greedy loop, a batch against each sentence alone, log-probabilities and scores
// recomputed through a fresh decoder for every length penalty, maximum lengths, dropped rows,
// sorted n-best lists with deterministic ties, and errors. Real layers and CUDA:
// test_beam_search_models.cpp.

#include <algorithm>
#include <cmath>
#include <vector>

#include "beam_search_helpers.h"

using namespace normgrad;
using decoding::BeamSearchOptions;
using decoding::Hypothesis;
using decoding::LengthPenalty;
using testing::bos;
using testing::check_sorted;
using testing::eos;
using testing::expected_score;
using testing::greedy;
using testing::HashDecoder;
using testing::recomputed_log_prob;
using testing::TableDecoder;

namespace {

const std::vector<LengthPenalty> penalties = {LengthPenalty::None, LengthPenalty::Average,
                                              LengthPenalty::Gnmt};

// eos 0, bos 1, a 2, b 3. From bos: a 0.6, b 0.4; after a: a 0.4, eos 0.3, b 0.3; after b:
// eos 0.9. Greedy takes a, then a forever (0.6 x 0.4^n); the best sentence is "b eos", 0.36.
TableDecoder greedy_trap(std::int64_t rows = 1) {
  const double n = -std::numeric_limits<double>::infinity();
  return TableDecoder({{n, n, n, n},
                       {n, n, std::log(0.6), std::log(0.4)},
                       {std::log(0.3), n, std::log(0.4), std::log(0.3)},
                       {std::log(0.9), n, std::log(0.05), std::log(0.05)}},
                      rows);
}

void check_same(const std::vector<Hypothesis>& a, const std::vector<Hypothesis>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].tokens == b[i].tokens);
    CHECK(a[i].ended_with_eos == b[i].ended_with_eos);
    CHECK(a[i].log_prob == b[i].log_prob);
    CHECK(a[i].score == b[i].score);
  }
}

const std::vector<std::int64_t> batch_sentences = {0, 1, 2, 3, 4, 5};
const std::vector<std::int64_t> batch_source_lengths = {3, 9, 1, 14, 6, 4};

BeamSearchOptions hash_options(std::int64_t k, LengthPenalty penalty) {
  return {.beam_size = k,
          .n_best = k,
          .bos = bos,
          .eos = eos,
          .length_penalty = penalty,
          .alpha = 0.7,
          .max_length_a = 1.0,
          .max_length_b = 3};
}

}  // namespace

TEST_CASE("beam search finds the sentence that greedy decoding misses") {
  TableDecoder wide = greedy_trap();
  const auto beam = decoding::beam_search(
      wide, {5}, {.beam_size = 2, .n_best = 2, .bos = bos, .eos = eos, .max_length_b = 6});
  REQUIRE(beam[0].size() == 2);
  CHECK(beam[0][0].tokens == std::vector<std::int64_t>{3});
  CHECK(beam[0][0].ended_with_eos);
  CHECK(beam[0][0].log_prob == doctest::Approx(std::log(0.36)).epsilon(1e-12));
  CHECK(beam[0][1].tokens == std::vector<std::int64_t>{2, 3});  // a b eos: 0.162
  check_sorted(beam[0]);

  TableDecoder narrow = greedy_trap();
  const auto greedy_result = decoding::beam_search(
      narrow, {5}, {.beam_size = 1, .bos = bos, .eos = eos, .max_length_b = 6});
  CHECK(greedy_result[0][0].tokens == std::vector<std::int64_t>(6, 2));  // a a a a a a, cut off
  CHECK_FALSE(greedy_result[0][0].ended_with_eos);
  CHECK(greedy_result[0][0].log_prob < beam[0][0].log_prob);
}

TEST_CASE("the length |Y| of a penalty counts eos, and a cut-off hypothesis has none") {
  for (const LengthPenalty penalty : penalties) {
    INFO("penalty " << decoding::to_string(penalty));
    TableDecoder decoder = greedy_trap();
    const Hypothesis best = decoding::beam_search(
        decoder, {1},
        {.beam_size = 2, .bos = bos, .eos = eos, .length_penalty = penalty, .alpha = 0.6})[0][0];
    REQUIRE(best.tokens == std::vector<std::int64_t>{3});
    CHECK(best.length() == 2);  // b and eos
    const double log_prob = std::log(0.4) + std::log(0.9);
    const double expected = penalty == LengthPenalty::None      ? log_prob
                            : penalty == LengthPenalty::Average ? log_prob / 2
                                                                : log_prob / std::pow(7.0 / 6, 0.6);
    CHECK(best.score == doctest::Approx(expected).epsilon(1e-12));

    TableDecoder trapped = greedy_trap();
    const Hypothesis cut = decoding::beam_search(trapped, {1},
                                                 {.beam_size = 1,
                                                  .bos = bos,
                                                  .eos = eos,
                                                  .length_penalty = penalty,
                                                  .max_length_b = 4})[0][0];
    CHECK(cut.length() == 4);
    CHECK(cut.score == doctest::Approx(expected_score(cut, penalty, 0.6)).epsilon(1e-12));
  }
}

TEST_CASE("beam size 1 is the greedy loop, sentence by sentence in a batch") {
  for (const bool never_eos : {false, true}) {
    INFO("never_eos " << never_eos);
    HashDecoder batch(11, eos, batch_sentences, never_eos);
    const auto results =
        decoding::beam_search(batch, batch_source_lengths, hash_options(1, LengthPenalty::None));
    for (std::size_t s = 0; s < batch_sentences.size(); ++s) {
      HashDecoder alone(11, eos, {batch_sentences[s]}, never_eos);
      const Hypothesis expected = greedy(
          alone,
          decoding::max_length(hash_options(1, LengthPenalty::None), batch_source_lengths[s]));
      REQUIRE(results[s].size() == 1);
      CHECK(results[s][0].tokens == expected.tokens);
      CHECK(results[s][0].ended_with_eos == expected.ended_with_eos);
      CHECK(results[s][0].log_prob == expected.log_prob);
    }
  }
}

TEST_CASE("a batch gives every sentence the n-best list it gets alone") {
  for (const LengthPenalty penalty : penalties)
    for (const std::int64_t k : {2, 4}) {
      INFO("penalty " << decoding::to_string(penalty) << ", k " << k);
      HashDecoder batch(13, eos, batch_sentences);
      const auto results =
          decoding::beam_search(batch, batch_source_lengths, hash_options(k, penalty));
      for (std::size_t s = 0; s < batch_sentences.size(); ++s) {
        HashDecoder alone(13, eos, {batch_sentences[s]});
        check_same(results[s], decoding::beam_search(alone, {batch_source_lengths[s]},
                                                     hash_options(k, penalty))[0]);
        check_sorted(results[s]);
      }
    }
}

TEST_CASE("log-probabilities are the decoder's and scores apply the documented penalty") {
  for (const LengthPenalty penalty : penalties) {
    INFO("penalty " << decoding::to_string(penalty));
    HashDecoder batch(13, eos, batch_sentences);
    const auto results =
        decoding::beam_search(batch, batch_source_lengths, hash_options(3, penalty));
    int ended_with_eos = 0, cut_off = 0;
    for (std::size_t s = 0; s < batch_sentences.size(); ++s) {
      CHECK(results[s].size() == 3);
      for (const Hypothesis& h : results[s]) {
        ++(h.ended_with_eos ? ended_with_eos : cut_off);
        HashDecoder fresh(13, eos, {batch_sentences[s]});
        CHECK(h.log_prob == doctest::Approx(recomputed_log_prob(fresh, h)).epsilon(1e-13));
        CHECK(h.score == doctest::Approx(expected_score(h, penalty, 0.7)).epsilon(1e-13));
        CHECK(std::find(h.tokens.begin(), h.tokens.end(), eos) == h.tokens.end());
      }
    }
    CHECK(ended_with_eos > 0);  // both kinds of ending are covered
    CHECK(cut_off > 0);
  }
}

TEST_CASE("maximum lengths follow a * source length + b per sentence and done rows are dropped") {
  // Never eos: every hypothesis runs to floor(1.5 src + 2): 2, 6 and 9 tokens.
  HashDecoder decoder(9, eos, {0, 1, 2}, /*never_eos=*/true);
  const BeamSearchOptions options{
      .beam_size = 3, .n_best = 3, .bos = bos, .eos = eos, .max_length_a = 1.5, .max_length_b = 2};
  const auto results = decoding::beam_search(decoder, {0, 3, 5}, options);
  const std::vector<std::int64_t> lengths = {2, 6, 9};
  for (std::size_t s = 0; s < 3; ++s) {
    CHECK(decoding::max_length(options, std::vector<std::int64_t>{0, 3, 5}[s]) == lengths[s]);
    REQUIRE(results[s].size() == 3);
    for (const Hypothesis& h : results[s]) {
      CHECK(static_cast<std::int64_t>(h.tokens.size()) == lengths[s]);
      CHECK_FALSE(h.ended_with_eos);
    }
  }
  // 3 rows, then 3 per sentence; 6 once the first is done, 3 once the second is.
  const std::vector<std::int64_t> expected_rows = {3, 9, 6, 6, 6, 6, 3, 3, 3};
  CHECK(decoder.log.step_rows == expected_rows);
}

TEST_CASE("equal scores keep the order in which the hypotheses finished") {
  // Every token has log-probability -1 (exact sums), eos 0: with averaging every finished
  // hypothesis scores exactly -1; they come back in the order they finished.
  const std::vector<double> flat(4, -1.0);
  TableDecoder decoder({flat, flat, flat, flat}, 1);
  const auto n_best = decoding::beam_search(decoder, {1},
                                            {.beam_size = 3,
                                             .n_best = 3,
                                             .bos = bos,
                                             .eos = eos,
                                             .length_penalty = LengthPenalty::Average})[0];
  REQUIRE(n_best.size() == 3);
  CHECK(n_best[0].tokens.empty());
  CHECK(n_best[1].tokens == std::vector<std::int64_t>{1});
  CHECK(n_best[2].tokens == std::vector<std::int64_t>{1, 1});
  for (const Hypothesis& h : n_best) CHECK(h.score == -1.0);
}

namespace {

// A decoder whose step returns whatever the test wants, to check what beam_search accepts.
class FixedOutputDecoder : public decoding::StepDecoder {
 public:
  explicit FixedOutputDecoder(Tensor output) : output_(std::move(output)) {}
  std::int64_t vocab_size() const override { return 4; }
  Device device() const override { return Device::cpu(); }
  Tensor step(const Tensor&) override {
    ++steps;
    return output_;
  }
  void reorder(const Tensor&) override {}
  int steps = 0;

 private:
  Tensor output_;
};

}  // namespace

TEST_CASE("beam_search errors name the call and the offending values, before any step") {
  FixedOutputDecoder decoder(zeros({1, 4}));
  const BeamSearchOptions good{.beam_size = 2, .n_best = 2, .bos = bos, .eos = eos};
  const auto with = [&](auto change) {
    BeamSearchOptions options = good;
    change(options);
    return options;
  };
  CHECK_ERROR(decoding::beam_search(decoder, {3}, with([](auto& o) { o.beam_size = 0; })),
              "beam_search", "beam_size must be >= 1, got 0");
  CHECK_ERROR(decoding::beam_search(decoder, {3}, with([](auto& o) { o.n_best = 3; })),
              "beam_search", "n_best must lie in [1, beam_size = 2], got 3");
  CHECK_ERROR(decoding::beam_search(decoder, {3}, with([](auto& o) { o.bos = 4; })), "beam_search",
              "bos 4 is outside the vocabulary [0, 4)");
  CHECK_ERROR(decoding::beam_search(decoder, {3}, with([](auto& o) { o.eos = -1; })), "beam_search",
              "eos -1 is outside the vocabulary [0, 4)");
  CHECK_ERROR(decoding::beam_search(decoder, {3}, with([](auto& o) { o.max_length_a = -0.5; })),
              "beam_search", "max_length_a", "got -0.5");
  CHECK_ERROR(decoding::beam_search(decoder, {3}, with([](auto& o) { o.alpha = -1; })),
              "beam_search", "alpha", "got -1");
  CHECK_ERROR(decoding::beam_search(decoder, {}, good), "beam_search", "empty batch");
  CHECK_ERROR(decoding::beam_search(decoder, {3, -2}, good), "beam_search",
              "sentence 1 has a negative source length -2");
  CHECK_ERROR(decoding::beam_search(decoder, {2, 4}, with([](auto& o) {
                                      o.max_length_a = 0.5;
                                      o.max_length_b = -1;
                                    })),
              "beam_search", "sentence 0 (source length 2) gets a maximum length of 0");
  CHECK(decoder.steps == 0);
}

TEST_CASE("beam_search refuses step outputs of the wrong shape or dtype, and NaN") {
  const BeamSearchOptions options{.beam_size = 2, .bos = bos, .eos = eos};
  FixedOutputDecoder wide(zeros({1, 5}));
  CHECK_ERROR(decoding::beam_search(wide, {3}, options), "beam_search", "step 1",
              "shape [1, 5], expected [1, 4]");
  FixedOutputDecoder two_rows(zeros({2, 4}));
  CHECK_ERROR(decoding::beam_search(two_rows, {3}, options), "beam_search",
              "shape [2, 4], expected [1, 4]");
  FixedOutputDecoder flat(zeros({4}));
  CHECK_ERROR(decoding::beam_search(flat, {3}, options), "beam_search", "shape [4]");
  FixedOutputDecoder integers(zeros({1, 4}, {.dtype = DType::Int64}));
  CHECK_ERROR(decoding::beam_search(integers, {3}, options), "beam_search", "dtype int64",
              "float32 or float64");
  FixedOutputDecoder nan(tensor({{0.0, NAN, -1.0, -2.0}}));
  CHECK_ERROR(decoding::beam_search(nan, {3}, options), "beam_search", "NaN at row 0, token 1");
  FixedOutputDecoder undefined{Tensor()};
  CHECK_ERROR(decoding::beam_search(undefined, {3}, options), "beam_search", "undefined");
}
