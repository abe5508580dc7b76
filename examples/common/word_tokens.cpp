#include "common/word_tokens.h"

#include <string_view>

#include "text/unicode_text.h"

namespace examples {

namespace text = normgrad::text;

namespace {

constexpr std::u32string_view kMarks = U"!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~“”„‚‘’«»‹›…–—·";

}  // namespace

std::vector<std::string> word_tokens(const std::string& line) {
  const std::u32string lower = text::python_lower(text::decode_utf8(line, "a line of text"));
  std::vector<std::string> tokens;
  std::u32string word;
  const auto flush = [&] {
    if (!word.empty()) tokens.push_back(text::encode_utf8(word));
    word.clear();
  };
  for (const char32_t c : lower) {
    if (text::is_python_space(c)) {
      flush();
    } else if (kMarks.find(c) != std::u32string_view::npos) {
      flush();
      tokens.push_back(text::encode_utf8(std::u32string(1, c)));
    } else {
      word += c;
    }
  }
  flush();
  return tokens;
}

bool is_punctuation_token(const std::string& token) {
  const std::u32string decoded = text::decode_utf8(token, "a token");
  return decoded.size() == 1 && kMarks.find(decoded[0]) != std::u32string_view::npos;
}

}  // namespace examples
