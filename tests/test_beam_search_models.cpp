// Beam search over real layers: a GRU decoder (Embedding, GruCell, Linear) and an attention
// decoder with a key/value cache, against each sentence alone, a fresh decoder's
// log-probabilities and a greedy loop; and the same search on CUDA against the CPU (skipped
// without a GPU).

#include <vector>

#include "beam_search_helpers.h"
#include "cuda_parity.h"

using namespace normgrad;
using decoding::BeamSearchOptions;
using decoding::Hypothesis;
using decoding::LengthPenalty;
using testing::bos;
using testing::CachedAttentionDecoder;
using testing::check_sorted;
using testing::eos;
using testing::greedy;
using testing::GruDecoder;
using testing::recomputed_log_prob;

TEST_CASE("a GRU decoder (Embedding, GruCell, Linear) runs through beam_search") {
  const std::vector<std::int64_t> sentences = {0, 1, 2, 3}, sources = {4, 7, 2, 5};
  const BeamSearchOptions options{.beam_size = 4,
                                  .n_best = 3,
                                  .bos = bos,
                                  .eos = eos,
                                  .length_penalty = LengthPenalty::Gnmt,
                                  .max_length_a = 1.0,
                                  .max_length_b = 2};
  GruDecoder batch(20, 8, 16, DType::Float64);
  batch.start(sentences, Device::cpu());
  const auto results = decoding::beam_search(batch, sources, options);
  for (std::size_t s = 0; s < sentences.size(); ++s) {
    INFO("sentence " << s);
    REQUIRE(results[s].size() == 3);
    check_sorted(results[s]);
    GruDecoder alone(20, 8, 16, DType::Float64);
    alone.start({sentences[s]}, Device::cpu());
    const auto single = decoding::beam_search(alone, {sources[s]}, options)[0];
    for (std::size_t i = 0; i < 3; ++i) {
      CHECK(single[i].tokens == results[s][i].tokens);
      CHECK(single[i].log_prob == doctest::Approx(results[s][i].log_prob).epsilon(1e-12));
      GruDecoder fresh(20, 8, 16, DType::Float64);
      fresh.start({sentences[s]}, Device::cpu());
      CHECK(results[s][i].log_prob ==
            doctest::Approx(recomputed_log_prob(fresh, results[s][i])).epsilon(1e-12));
    }
    GruDecoder greedy_decoder(20, 8, 16, DType::Float64);
    greedy_decoder.start({sentences[s]}, Device::cpu());
    const Hypothesis expected = greedy(greedy_decoder, decoding::max_length(options, sources[s]));
    GruDecoder k1(20, 8, 16, DType::Float64);
    k1.start({sentences[s]}, Device::cpu());
    BeamSearchOptions greedy_options = options;
    greedy_options.beam_size = greedy_options.n_best = 1;
    const Hypothesis found = decoding::beam_search(k1, {sources[s]}, greedy_options)[0][0];
    CHECK(found.tokens == expected.tokens);
    CHECK(found.log_prob == expected.log_prob);
  }
  CHECK(batch.log.step_rows.front() == 4);
  CHECK(batch.log.reorders.front().size() == 16);  // 4 sentences of 4 rows
}

TEST_CASE("a decoder with a growing key/value cache runs through beam_search") {
  const std::vector<std::int64_t> sentences = {0, 1, 2}, sources = {5, 2, 8};
  const BeamSearchOptions options{.beam_size = 3,
                                  .n_best = 2,
                                  .bos = bos,
                                  .eos = eos,
                                  .length_penalty = LengthPenalty::Average,
                                  .max_length_a = 0.5,
                                  .max_length_b = 3};
  CachedAttentionDecoder batch(15, 8);
  batch.start(sentences);
  const auto results = decoding::beam_search(batch, sources, options);
  // The cache holds one position per step taken, for the rows that are left.
  CHECK(batch.cache_length() == static_cast<std::int64_t>(batch.log.step_rows.size()));
  for (std::size_t s = 0; s < sentences.size(); ++s) {
    INFO("sentence " << s);
    CachedAttentionDecoder alone(15, 8);
    alone.start({sentences[s]});
    const auto single = decoding::beam_search(alone, {sources[s]}, options)[0];
    REQUIRE(single.size() == results[s].size());
    for (std::size_t i = 0; i < single.size(); ++i) {
      CHECK(single[i].tokens == results[s][i].tokens);
      CHECK(single[i].log_prob == doctest::Approx(results[s][i].log_prob).epsilon(1e-12));
      CachedAttentionDecoder fresh(15, 8);
      fresh.start({sentences[s]});
      CHECK(results[s][i].log_prob ==
            doctest::Approx(recomputed_log_prob(fresh, results[s][i])).epsilon(1e-12));
    }
  }
}

TEST_CASE("beam_search on CUDA gives the CPU's n-best lists") {
  SKIP_PARITY_WITHOUT_CUDA();
  const std::vector<std::int64_t> sentences = {0, 1, 2}, sources = {3, 6, 4};
  const BeamSearchOptions options{.beam_size = 3,
                                  .n_best = 3,
                                  .bos = bos,
                                  .eos = eos,
                                  .length_penalty = LengthPenalty::Average,
                                  .max_length_a = 1.0,
                                  .max_length_b = 2};
  GruDecoder cpu(50, 16, 32, DType::Float32), gpu(50, 16, 32, DType::Float32);
  cpu.start(sentences, Device::cpu());
  gpu.start(sentences, testing::parity_device());
  CHECK(gpu.device() == testing::parity_device());
  const auto expected = decoding::beam_search(cpu, sources, options);
  const auto actual = decoding::beam_search(gpu, sources, options);
  for (std::size_t s = 0; s < sentences.size(); ++s) {
    REQUIRE(actual[s].size() == expected[s].size());
    for (std::size_t i = 0; i < expected[s].size(); ++i) {
      CHECK(actual[s][i].tokens == expected[s][i].tokens);
      CHECK(actual[s][i].log_prob == doctest::Approx(expected[s][i].log_prob).epsilon(1e-5));
    }
  }
}
