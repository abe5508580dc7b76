#include "text/bleu_tokenizer.h"

#include "base/error.h"
#include "text/unicode_text.h"

namespace normgrad::text {
namespace {

bool is_digit(char32_t c) { return c >= U'0' && c <= U'9'; }

// The class [{-~[-` -&(-+:-@/] of step 2: ASCII punctuation and the space, except - ' , .
bool is_split_punctuation(char32_t c) {
  return (c >= U'{' && c <= U'~') || (c >= U'[' && c <= U'`') || (c >= U' ' && c <= U'&') ||
         (c >= U'(' && c <= U'+') || (c >= U':' && c <= U'@') || c == U'/';
}

bool is_period_or_comma(char32_t c) { return c == U'.' || c == U','; }

void replace_all(std::u32string& text, std::u32string_view from, std::u32string_view to) {
  std::u32string out;
  out.reserve(text.size());
  std::size_t start = 0;
  for (std::size_t hit = text.find(from); hit != std::u32string::npos;
       hit = text.find(from, start)) {
    out.append(text, start, hit - start);
    out.append(to);
    start = hit + from.size();
  }
  out.append(text, start);
  text = std::move(out);
}

// One pass of a two-character substitution "(a)(b)" -> spaces around them, scanning left to
// right and resuming after each match, as re.sub does.
template <typename Matches, typename Write>
std::u32string substitute_pairs(const std::u32string& text, Matches matches, Write write) {
  std::u32string out;
  out.reserve(text.size() + text.size() / 4);
  std::size_t i = 0;
  while (i < text.size()) {
    if (i + 1 < text.size() && matches(text[i], text[i + 1])) {
      write(out, text[i], text[i + 1]);
      i += 2;
    } else {
      out.push_back(text[i]);
      ++i;
    }
  }
  return out;
}

}  // namespace

BleuTokenizer parse_bleu_tokenizer(std::string_view name) {
  if (name == "13a") return BleuTokenizer::v13a;
  if (name == "none") return BleuTokenizer::none;
  throw Error(
      detail::concat("parse_bleu_tokenizer: unknown tokenizer '", name, "'; expected 13a or none"));
}

const char* bleu_tokenizer_name(BleuTokenizer tokenizer) {
  return tokenizer == BleuTokenizer::v13a ? "13a" : "none";
}

std::u32string tokenize_13a(std::u32string_view line) {
  std::u32string text(line);
  replace_all(text, U"<skipped>", U"");
  replace_all(text, U"-\n", U"");
  replace_all(text, U"\n", U" ");
  if (text.find(U'&') != std::u32string::npos) {
    replace_all(text, U"&quot;", U"\"");
    replace_all(text, U"&amp;", U"&");
    replace_all(text, U"&lt;", U"<");
    replace_all(text, U"&gt;", U">");
  }

  // Step 2 on " " + text + " ".
  std::u32string spaced;
  spaced.reserve(text.size() * 2 + 8);
  spaced.append(U"   ");  // the leading space, itself in the class: " " -> "   "
  for (char32_t c : text) {
    if (is_split_punctuation(c)) {
      spaced.push_back(U' ');
      spaced.push_back(c);
      spaced.push_back(U' ');
    } else {
      spaced.push_back(c);
    }
  }
  spaced.append(U"   ");

  const auto after_non_digit = substitute_pairs(
      spaced, [](char32_t a, char32_t b) { return !is_digit(a) && is_period_or_comma(b); },
      [](std::u32string& out, char32_t a, char32_t b) {
        out += {a, U' ', b, U' '};
      });
  const auto before_non_digit = substitute_pairs(
      after_non_digit, [](char32_t a, char32_t b) { return is_period_or_comma(a) && !is_digit(b); },
      [](std::u32string& out, char32_t a, char32_t b) {
        out += {U' ', a, U' ', b};
      });
  const auto dashes = substitute_pairs(
      before_non_digit, [](char32_t a, char32_t b) { return is_digit(a) && b == U'-'; },
      [](std::u32string& out, char32_t a, char32_t b) {
        out += {a, U' ', b, U' '};
      });

  std::u32string joined;
  joined.reserve(dashes.size());
  for (std::u32string_view word : python_split(dashes)) {
    if (!joined.empty()) joined.push_back(U' ');
    joined.append(word);
  }
  return joined;
}

std::u32string tokenize(BleuTokenizer tokenizer, std::u32string_view line) {
  if (tokenizer == BleuTokenizer::v13a) return tokenize_13a(line);
  return std::u32string(line);
}

}  // namespace normgrad::text
