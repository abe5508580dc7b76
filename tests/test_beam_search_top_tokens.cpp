// top_tokens (decoding/top_tokens.h), the per-row selection beam search relies on: against a
// full sort, for float32 and float64 rows long enough for its blocked, vectorised pass, with
// many ties, -inf, and NaN anywhere in a row.

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "decoding/top_tokens.h"
#include "helpers.h"

using namespace normgrad;
using decoding::TokenLogProb;

namespace {

// The expected selection: indices sorted by value (larger first), then by index.
template <typename T>
std::vector<std::int64_t> sorted_best(const std::vector<T>& row, std::int64_t count) {
  std::vector<std::int64_t> order(row.size());
  std::iota(order.begin(), order.end(), std::int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
    return row[static_cast<std::size_t>(a)] > row[static_cast<std::size_t>(b)];
  });
  order.resize(static_cast<std::size_t>(count));
  return order;
}

template <typename T> void check_against_sort(std::uint64_t seed) {
  Generator generator(seed);
  for (const std::int64_t vocab : {1, 5, 16, 17, 63, 200, 1001}) {
    // Few distinct values, so that ties are everywhere; some -inf.
    const std::vector<double> draws =
        rand({vocab}, generator, {.dtype = DType::Float64}).template to_vector<double>();
    std::vector<T> row;
    for (const double u : draws)
      row.push_back(u < 0.05 ? -std::numeric_limits<T>::infinity()
                             : static_cast<T>(std::floor(u * 7) - 8));
    for (const std::int64_t count : {1, 2, 6}) {
      if (count > vocab) continue;
      INFO("vocab " << vocab << ", count " << count);
      std::vector<TokenLogProb> best(static_cast<std::size_t>(count));
      CHECK(decoding::top_tokens(row.data(), vocab, count, best.data()) == -1);
      const std::vector<std::int64_t> expected = sorted_best(row, count);
      for (std::size_t i = 0; i < expected.size(); ++i) {
        CHECK(best[i].token == expected[i]);
        CHECK(best[i].log_prob == static_cast<double>(row[static_cast<std::size_t>(expected[i])]));
      }
    }
  }
}

}  // namespace

TEST_CASE("top_tokens keeps the best entries in order, smaller token ids first on ties") {
  const std::vector<float> row = {0.5f, -1.0f, 2.0f, 0.5f, 2.0f, -3.0f, 0.5f};
  std::vector<TokenLogProb> best(4);
  CHECK(decoding::top_tokens(row.data(), 7, 4, best.data()) == -1);
  const std::vector<std::int64_t> tokens = {best[0].token, best[1].token, best[2].token,
                                            best[3].token};
  CHECK(tokens == std::vector<std::int64_t>{2, 4, 0, 3});
  CHECK(best[3].log_prob == 0.5);
}

TEST_CASE("top_tokens agrees with a full sort for float32 and float64 rows") {
  check_against_sort<float>(5);
  check_against_sort<double>(6);
}

TEST_CASE("top_tokens reports NaN wherever it lies in a row") {
  for (const std::int64_t at : {0, 3, 15, 16, 40, 99}) {
    INFO("NaN at " << at);
    std::vector<float> floats(100, -2.0f);
    std::vector<double> doubles(100, -2.0);
    floats[static_cast<std::size_t>(at)] = NAN;
    doubles[static_cast<std::size_t>(at)] = NAN;
    std::vector<TokenLogProb> best(3);
    CHECK(decoding::top_tokens(floats.data(), 100, 3, best.data()) == at);
    CHECK(decoding::top_tokens(doubles.data(), 100, 3, best.data()) == at);
  }
}
