#pragma once
// What the beam-search tests (test_beam_search*.cpp) share. Step decoders: a table conditioned on
// the previous token, whose best sequence is known; a hash of the prefix, whose log-probabilities
// depend on the sentence and the whole prefix, as a real model's do; a real model, an
// Embedding, a GruCell and a Linear output layer; and an attention decoder with a key/value cache.
// Each records what the search asked of it. Checks: a greedy loop written out, log-probabilities
// recomputed through a fresh decoder, and the documented length penalties written out again.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "decoding/beam_search.h"
#include "helpers.h"

namespace testing {

using normgrad::decoding::Hypothesis;
using normgrad::decoding::LengthPenalty;
using normgrad::decoding::StepDecoder;

// What a decoder was asked: the number of rows of every step, and every reorder.
struct DecoderLog {
  std::vector<std::int64_t> step_rows;
  std::vector<std::vector<std::int64_t>> reorders;
};

// Checks a reorder's rows against the current row count and returns the new count.
inline std::int64_t checked_reorder(const Tensor& rows, std::int64_t current, DecoderLog& log) {
  if (rows.dtype() != DType::Int64 || rows.dim() != 1)
    throw std::logic_error("reorder: rows must be int64 [new_rows]");
  const std::vector<std::int64_t> values = rows.to_vector<std::int64_t>();
  for (const std::int64_t row : values)
    if (row < 0 || row >= current) throw std::logic_error("reorder: row out of range");
  log.reorders.push_back(values);
  return static_cast<std::int64_t>(values.size());
}

// log P(next | previous) from a fixed [V, V] table (row = previous token), whatever the row.
class TableDecoder : public StepDecoder {
 public:
  TableDecoder(std::vector<std::vector<double>> table, std::int64_t rows)
      : table_(std::move(table)), rows_(rows) {}
  std::int64_t vocab_size() const override { return static_cast<std::int64_t>(table_.size()); }
  Device device() const override { return Device::cpu(); }
  Tensor step(const Tensor& previous) override {
    if (previous.size(0) != rows_) throw std::logic_error("step: wrong number of rows");
    log.step_rows.push_back(rows_);
    std::vector<double> values;
    for (const std::int64_t token : previous.to_vector<std::int64_t>())
      for (const double p : table_[static_cast<std::size_t>(token)]) values.push_back(p);
    return from_vector(values, {rows_, vocab_size()});
  }
  void reorder(const Tensor& rows) override { rows_ = checked_reorder(rows, rows_, log); }
  DecoderLog log;

 private:
  std::vector<std::vector<double>> table_;
  std::int64_t rows_;
};

// log-softmax of logits hashed from (sentence, whole prefix, token), float64. eos grows likely
// as the prefix passes a length that depends on the sentence (or never comes, with never_eos).
class HashDecoder : public StepDecoder {
 public:
  HashDecoder(std::int64_t vocab, std::int64_t eos, const std::vector<std::int64_t>& sentences,
              bool never_eos = false)
      : vocab_(vocab), eos_(eos), never_eos_(never_eos) {
    for (const std::int64_t s : sentences) rows_.push_back({s, mix(0x9e3779b97f4a7c15ULL, s), 0});
  }
  std::int64_t vocab_size() const override { return vocab_; }
  Device device() const override { return Device::cpu(); }
  Tensor step(const Tensor& previous) override {
    const std::vector<std::int64_t> tokens = previous.to_vector<std::int64_t>();
    if (tokens.size() != rows_.size()) throw std::logic_error("step: wrong number of rows");
    log.step_rows.push_back(static_cast<std::int64_t>(rows_.size()));
    std::vector<double> values;
    for (std::size_t r = 0; r < rows_.size(); ++r) {
      Row& row = rows_[r];
      row.hash = mix(row.hash, tokens[r]);
      ++row.length;
      std::vector<double> logits(static_cast<std::size_t>(vocab_));
      for (std::int64_t v = 0; v < vocab_; ++v)
        logits[static_cast<std::size_t>(v)] =
            4.0 * static_cast<double>(mix(row.hash, v) >> 11) * 0x1.0p-53;
      const double target = static_cast<double>(2 + row.sentence % 5);
      logits[static_cast<std::size_t>(eos_)] =
          never_eos_ ? -std::numeric_limits<double>::infinity()
                     : 1.5 * (static_cast<double>(row.length) - target);
      double top = logits[0], total = 0;
      for (const double l : logits) top = std::max(top, l);
      for (const double l : logits) total += std::exp(l - top);
      for (const double l : logits) values.push_back(l - top - std::log(total));
    }
    return from_vector(values, {static_cast<std::int64_t>(rows_.size()), vocab_});
  }
  void reorder(const Tensor& rows) override {
    checked_reorder(rows, static_cast<std::int64_t>(rows_.size()), log);
    std::vector<Row> next;
    for (const std::int64_t row : log.reorders.back())
      next.push_back(rows_[static_cast<std::size_t>(row)]);
    rows_ = next;
  }
  DecoderLog log;

 private:
  struct Row {
    std::int64_t sentence;
    std::uint64_t hash;
    std::int64_t length;
  };
  static std::uint64_t mix(std::uint64_t hash, std::int64_t value) {  // splitmix64 of both
    std::uint64_t z = hash ^ (static_cast<std::uint64_t>(value) + 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  std::int64_t vocab_, eos_;
  bool never_eos_;
  std::vector<Row> rows_;
};

// A real model: embed the previous token, one GruCell step, a Linear layer to V logits and a
// log-softmax. The state of sentence s starts as a fixed random vector, the same in any batch.
class GruDecoder : public StepDecoder {
 public:
  GruDecoder(std::int64_t vocab, std::int64_t embedding, std::int64_t hidden, DType dtype)
      : embed_(vocab, embedding, {.padding_index = std::nullopt, .dtype = dtype}),
        cell_(embedding, hidden, {.dtype = dtype}),
        output_(hidden, vocab, {.dtype = dtype}),
        vocab_(vocab),
        dtype_(dtype) {}
  void start(const std::vector<std::int64_t>& sentences, Device device) {
    embed_.to(device);
    cell_.to(device);
    output_.to(device);
    std::vector<Tensor> states;
    for (const std::int64_t s : sentences) {
      Generator generator(1000 + static_cast<std::uint64_t>(s));
      states.push_back(randn({cell_.hidden_size()}, generator, {.dtype = dtype_}));
    }
    state_ = normgrad::stack(states).to(device);
  }
  std::int64_t vocab_size() const override { return vocab_; }
  Device device() const override { return state_.device(); }
  Tensor step(const Tensor& previous) override {
    log.step_rows.push_back(previous.size(0));
    state_ = cell_.forward(embed_.forward(previous), state_);
    return normgrad::log_softmax(output_.forward(state_), 1);
  }
  void reorder(const Tensor& rows) override {
    checked_reorder(rows, state_.size(0), log);
    state_ = normgrad::index_select(state_, 0, rows);
  }
  DecoderLog log;

 private:
  // Constructed first: the layers after it draw their weights from the default generator, so
  // every GruDecoder has the same ones.
  struct Seeded {
    Seeded() { normgrad::manual_seed(7); }
  } seeded_;
  nn::Embedding embed_;
  nn::GruCell cell_;
  nn::Linear output_;
  std::int64_t vocab_;
  DType dtype_;
  Tensor state_;
};

// A decoder with a cache that grows by one position a step, as a Transformer decoder's
// self-attention keys and values do: [rows, 1 head, t, d]. A step embeds the token (plus a
// per-sentence memory vector standing in for the encoder), appends its key and value,
// attends from it over the cache and projects to V; reorder index_selects every row tensor.
class CachedAttentionDecoder : public StepDecoder {
 public:
  CachedAttentionDecoder(std::int64_t vocab, std::int64_t dim)
      : embed_(vocab, dim, {.padding_index = std::nullopt, .dtype = DType::Float64}),
        key_(dim, dim, {.dtype = DType::Float64}),
        value_(dim, dim, {.dtype = DType::Float64}),
        output_(dim, vocab, {.dtype = DType::Float64}),
        vocab_(vocab) {}
  void start(const std::vector<std::int64_t>& sentences) {
    std::vector<Tensor> memories;
    for (const std::int64_t s : sentences) {
      Generator generator(2000 + static_cast<std::uint64_t>(s));
      memories.push_back(randn({embed_.weight.size(1)}, generator, {.dtype = DType::Float64}));
    }
    memory_ = normgrad::stack(memories);
    keys_ = values_ = Tensor();
  }
  std::int64_t vocab_size() const override { return vocab_; }
  Device device() const override { return Device::cpu(); }
  Tensor step(const Tensor& previous) override {
    log.step_rows.push_back(previous.size(0));
    const Tensor x = embed_.forward(previous) + memory_;  // [rows, d]
    const auto position = [](const Tensor& t) { return t.unsqueeze(1).unsqueeze(1); };
    const Tensor key = position(key_.forward(x)), value = position(value_.forward(x));
    keys_ = keys_.defined() ? normgrad::cat({keys_, key}, 2) : key;
    values_ = values_.defined() ? normgrad::cat({values_, value}, 2) : value;
    const Tensor attended =
        nn::functional::scaled_dot_product_attention(position(x), keys_, values_).output;
    const Tensor hidden = normgrad::tanh(attended.flatten(1) + x);
    return normgrad::log_softmax(output_.forward(hidden), 1);
  }
  void reorder(const Tensor& rows) override {
    checked_reorder(rows, memory_.size(0), log);
    memory_ = normgrad::index_select(memory_, 0, rows);
    keys_ = normgrad::index_select(keys_, 0, rows);
    values_ = normgrad::index_select(values_, 0, rows);
  }
  std::int64_t cache_length() const { return keys_.defined() ? keys_.size(2) : 0; }
  DecoderLog log;

 private:
  struct Seeded {
    Seeded() { normgrad::manual_seed(8); }
  } seeded_;
  nn::Embedding embed_;
  nn::Linear key_, value_, output_;
  std::int64_t vocab_;
  Tensor memory_, keys_, values_;
};

// The token ids every test uses.
constexpr std::int64_t eos = 0, bos = 1;

// A greedy loop written out: feed bos, take the first maximum, stop at eos or max_length.
inline Hypothesis greedy(StepDecoder& decoder, std::int64_t max_length) {
  Hypothesis result;
  std::int64_t previous = bos;
  for (std::int64_t t = 1; t <= max_length; ++t) {
    const Tensor row = decoder.step(from_vector(std::vector<std::int64_t>{previous}, {1}));
    const std::vector<double> values = row.to_vector<double>();
    const auto best = std::max_element(values.begin(), values.end()) - values.begin();
    result.log_prob += values[static_cast<std::size_t>(best)];
    if (best == eos) {
      result.ended_with_eos = true;
      break;
    }
    result.tokens.push_back(best);
    previous = best;
  }
  return result;
}

// log P of a hypothesis under a fresh decoder (one row): its tokens, then eos if it has one.
inline double recomputed_log_prob(StepDecoder& fresh, const Hypothesis& hypothesis) {
  std::vector<std::int64_t> targets = hypothesis.tokens;
  if (hypothesis.ended_with_eos) targets.push_back(eos);
  double total = 0;
  std::int64_t previous = bos;
  for (const std::int64_t target : targets) {
    const Tensor row = fresh.step(from_vector(std::vector<std::int64_t>{previous}, {1}));
    total += row.to_vector<double>()[static_cast<std::size_t>(target)];
    previous = target;
  }
  return total;
}

// The documented penalties, written out again: |Y| counts eos.
inline double expected_score(const Hypothesis& h, LengthPenalty penalty, double alpha) {
  const double length = static_cast<double>(h.tokens.size() + (h.ended_with_eos ? 1 : 0));
  if (penalty == LengthPenalty::Average) return h.log_prob / length;
  if (penalty == LengthPenalty::Gnmt) return h.log_prob / std::pow((5 + length) / 6, alpha);
  return h.log_prob;
}

inline void check_sorted(const std::vector<Hypothesis>& n_best) {
  for (std::size_t i = 1; i < n_best.size(); ++i) CHECK(n_best[i - 1].score >= n_best[i].score);
}

}  // namespace testing
