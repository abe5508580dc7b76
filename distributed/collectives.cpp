#include "distributed/collectives.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"

namespace normgrad::distributed {

std::vector<double> sum_over_ranks(const ProcessGroup& group, const std::vector<double>& values) {
  const Tensor sums = from_vector(values, {std::ssize(values)}).to(DType::Float64);
  group.all_reduce(sums);
  return sums.to_vector<double>();
}

std::vector<std::string> all_gather_text(const ProcessGroup& group, const std::string& text) {
  // The lengths first, then the bytes, 8 to an int64 and padded to the longest text.
  const std::vector<std::int64_t> lengths =
      group.all_gather(from_vector(std::vector<std::int64_t>{std::ssize(text)}, {1}))
          .to_vector<std::int64_t>();
  const std::int64_t longest = *std::max_element(lengths.begin(), lengths.end());
  const std::int64_t words = (longest + 7) / 8;
  std::vector<std::int64_t> packed(static_cast<std::size_t>(words), 0);
  if (!text.empty()) std::memcpy(packed.data(), text.data(), text.size());
  const std::vector<std::int64_t> all =
      group.all_gather(from_vector(packed, {words})).to_vector<std::int64_t>();
  std::vector<std::string> texts;
  for (std::size_t r = 0; r < lengths.size(); ++r) {
    std::string theirs(static_cast<std::size_t>(lengths[r]), '\0');
    if (!theirs.empty())
      std::memcpy(theirs.data(), all.data() + r * static_cast<std::size_t>(words), theirs.size());
    texts.push_back(std::move(theirs));
  }
  return texts;
}

std::vector<std::vector<std::string>> all_gather_strings(const ProcessGroup& group,
                                                         const std::vector<std::string>& strings) {
  // Each string as its length, a colon and its bytes.
  std::string text;
  for (const std::string& s : strings) text += std::to_string(s.size()) + ":" + s;
  std::vector<std::vector<std::string>> lists;
  for (const std::string& theirs : all_gather_text(group, text)) {
    lists.emplace_back();
    for (std::size_t at = 0; at < theirs.size();) {
      const std::size_t colon = theirs.find(':', at);
      NG_CHECK(colon != std::string::npos, "distributed: all_gather_strings", "a damaged list");
      const std::size_t length = std::stoull(theirs.substr(at, colon - at));
      lists.back().push_back(theirs.substr(colon + 1, length));
      at = colon + 1 + length;
    }
  }
  return lists;
}

}  // namespace normgrad::distributed
