#include "text/unicode_text.h"

#include <algorithm>

#include "base/error.h"
#include "text/unicode_tables.h"

namespace normgrad::text {
namespace {

namespace tables = unicode_tables;

bool in_ranges(const tables::CodePointRange* ranges, std::size_t size, char32_t c) {
  const tables::CodePointRange* end = ranges + size;
  // The first range whose last code point is not below c.
  const auto* it = std::lower_bound(
      ranges, end, c,
      [](const tables::CodePointRange& range, char32_t value) { return range.last < value; });
  return it != end && it->first <= c;
}

bool is_cased(char32_t c) { return in_ranges(tables::cased, tables::cased_size, c); }

bool is_case_ignorable(char32_t c) {
  return in_ranges(tables::case_ignorable, tables::case_ignorable_size, c);
}

// The final-sigma rule of Unicode's SpecialCasing, as Python applies it: a capital sigma at
// position i becomes a final sigma when a cased letter precedes it and none follows it,
// skipping case-ignorable code points (apostrophes, combining marks) on both sides.
bool is_final_sigma(std::u32string_view text, std::size_t i) {
  std::size_t j = i;
  while (j > 0 && is_case_ignorable(text[j - 1])) --j;
  if (j == 0 || !is_cased(text[j - 1])) return false;
  std::size_t k = i + 1;
  while (k < text.size() && is_case_ignorable(text[k])) ++k;
  return k == text.size() || !is_cased(text[k]);
}

[[noreturn]] void throw_invalid(std::string_view where, std::size_t offset, std::string_view what) {
  throw Error(
      detail::concat("decode_utf8: ", where, ": invalid UTF-8 at byte ", offset, " (", what, ")"));
}

}  // namespace

std::u32string decode_utf8(std::string_view text, std::string_view where) {
  std::u32string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    if (lead < 0x80) {
      out.push_back(lead);
      ++i;
      continue;
    }
    std::size_t length = 0;
    char32_t value = 0;
    char32_t smallest = 0;  // the smallest code point this length may encode (no overlong forms)
    if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2, value = lead & 0x1F, smallest = 0x80;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3, value = lead & 0x0F, smallest = 0x800;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4, value = lead & 0x07, smallest = 0x10000;
    } else {
      throw_invalid(where, i, "a byte that cannot start a character");
    }
    if (i + length > text.size()) throw_invalid(where, i, "a character cut off by the end");
    for (std::size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80) throw_invalid(where, i, "a missing continuation byte");
      value = (value << 6) | (next & 0x3F);
    }
    if (value < smallest) throw_invalid(where, i, "an overlong form");
    if (value >= 0xD800 && value <= 0xDFFF) throw_invalid(where, i, "a surrogate");
    if (value > 0x10FFFF) throw_invalid(where, i, "a code point above U+10FFFF");
    out.push_back(value);
    i += length;
  }
  return out;
}

std::string encode_utf8(std::u32string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char32_t c : text) {
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (c >> 6)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (c >> 12)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (c >> 18)));
      out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
  return out;
}

bool is_python_space(char32_t c) {
  if (c <= 0x20) return (c >= 0x09 && c <= 0x0D) || c >= 0x1C;
  if (c < 0x85) return false;
  return in_ranges(tables::whitespace, tables::whitespace_size, c);
}

std::u32string python_lower(std::u32string_view text) {
  std::u32string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char32_t c = text[i];
    if (c < 0x80) {
      out.push_back(c >= U'A' && c <= U'Z' ? c + 32 : c);
      continue;
    }
    if (c == U'\u03A3') {
      out.push_back(is_final_sigma(text, i) ? U'\u03C2' : U'\u03C3');
      continue;
    }
    const auto* long_end = tables::long_lower + tables::long_lower_size;
    const auto* long_it =
        std::find_if(tables::long_lower, long_end,
                     [c](const tables::LongLowerMapping& m) { return m.from == c; });
    if (long_it != long_end) {
      out.append(long_it->to, 2);
      continue;
    }
    // The last run that starts at or before c lowercases c if c is one of its code points.
    const auto* after = std::upper_bound(
        tables::lower, tables::lower + tables::lower_size, c,
        [](char32_t value, const tables::LowerRun& run) { return value < run.first; });
    const tables::LowerRun* run = after == tables::lower ? nullptr : after - 1;
    const bool lowered = run && c <= run->last && (c - run->first) % run->stride == 0;
    out.push_back(lowered ? static_cast<char32_t>(static_cast<long>(c) + run->delta) : c);
  }
  return out;
}

std::u32string_view python_rstrip(std::u32string_view text) {
  std::size_t end = text.size();
  while (end > 0 && is_python_space(text[end - 1])) --end;
  return text.substr(0, end);
}

std::vector<std::u32string_view> python_split(std::u32string_view text) {
  std::vector<std::u32string_view> words;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_python_space(text[i])) ++i;
    const std::size_t start = i;
    while (i < text.size() && !is_python_space(text[i])) ++i;
    if (i > start) words.push_back(text.substr(start, i - start));
  }
  return words;
}

const char* unicode_version() { return tables::unicode_version; }

}  // namespace normgrad::text
