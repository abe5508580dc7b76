#include "decoding/top_tokens.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace normgrad::decoding {
namespace {

// True when one of the first 64 bytes of entries of `block` is above `worst` or NaN, compared 16
// bytes at a time with GCC/Clang vector extensions: 16 bytes is the register of every x86-64 (SSE2)
// and ARM (NEON) target, so each compare is one instruction (wider vectors are split into scalar
// code on a target without them). The many blocks of a row that hold nothing better than the
// current count-th best cost a few instructions each and no branch per entry; a loop of scalar
// comparisons, which GCC 12 does not vectorise, took 0.7 ns an entry.
constexpr std::size_t vector_bytes = 16, vectors_per_block = 4;
template <typename T> bool any_above(const T* block, T worst) {
  typedef T Vector __attribute__((vector_size(vector_bytes)));
  using Mask = decltype(Vector{} <= Vector{});  // int32 or int64 lanes
  constexpr std::size_t lanes = vector_bytes / sizeof(T);
  Vector limit;
  for (std::size_t i = 0; i < lanes; ++i) limit[i] = worst;
  // All ones in lanes <= worst; an entry above worst, or NaN, leaves zeros.
  Mask at_most = ~Mask{};
  for (std::size_t v = 0; v < vectors_per_block; ++v) {
    Vector values;
    std::memcpy(&values, block + v * lanes, vector_bytes);  // an unaligned load
    at_most &= values <= limit;
  }
  std::uint64_t words[2];
  std::memcpy(words, &at_most, vector_bytes);
  return (words[0] & words[1]) != ~std::uint64_t{0};
}

template <typename T>
std::int64_t select_top(const T* row, std::int64_t vocab, std::int64_t count, TokenLogProb* best) {
  std::int64_t filled = 0;
  T worst = 0;  // best[count - 1].log_prob once `filled` reaches count
  std::int64_t token = 0;
  while (token < vocab) {
    const auto width = static_cast<std::int64_t>(vectors_per_block * vector_bytes / sizeof(T));
    const std::int64_t end = std::min(token + width, vocab);
    if (filled == count && end - token == width && !any_above(row + token, worst)) {
      token = end;
      continue;
    }
    for (; token < end; ++token) {
      const T value = row[token];
      // No better than the count-th best: a later token with an equal value ranks after it
      // (larger id), so it does not enter either. NaN fails the comparison and is caught below.
      if (filled == count && value <= worst) continue;
      if (std::isnan(value)) return token;
      // Insert after every kept entry that is at least as large (they have smaller ids).
      std::int64_t slot = filled < count ? filled++ : count - 1;
      while (slot > 0 && best[slot - 1].log_prob < value) {
        best[slot] = best[slot - 1];
        --slot;
      }
      best[slot] = {token, value};
      // Exact: the kept values are T values, stored as double.
      if (filled == count) worst = static_cast<T>(best[count - 1].log_prob);
    }
  }
  return -1;
}

}  // namespace

std::int64_t top_tokens(const float* row, std::int64_t vocab, std::int64_t count,
                        TokenLogProb* best) {
  return select_top(row, vocab, count, best);
}

std::int64_t top_tokens(const double* row, std::int64_t vocab, std::int64_t count,
                        TokenLogProb* best) {
  return select_top(row, vocab, count, best);
}

}  // namespace normgrad::decoding
