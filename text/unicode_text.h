#pragma once
// UTF-8 text as sacreBLEU, a Python program, sees it: code points, Python's whitespace and
// Python's str.lower(). BLEU and chrF count words split at that whitespace and characters as
// code points, so matching them to the last digit needs the same definitions, not the C
// locale's. The facts come from tables generated from Python itself (unicode_tables.cpp).

#include <string>
#include <string_view>
#include <vector>

namespace normgrad::text {

// Decodes UTF-8 strictly, as Python's "utf-8" codec does: overlong forms, surrogates, code
// points above U+10FFFF and truncated sequences are an Error that names `where` (a file and
// line, say) and the byte offset of the bad sequence.
std::u32string decode_utf8(std::string_view text, std::string_view where);

std::string encode_utf8(std::u32string_view text);

// Python's str.isspace(): ASCII whitespace, U+001C..U+001F, U+0085, no-break spaces, the
// Unicode spaces and the line and paragraph separators.
bool is_python_space(char32_t c);

// Python's str.lower(): the Unicode lowercase mapping, U+0130 to "i" + U+0307, and a capital
// sigma at the end of a word to a final sigma.
std::u32string python_lower(std::u32string_view text);

// Python's str.rstrip(): text without its trailing whitespace.
std::u32string_view python_rstrip(std::u32string_view text);

// Python's str.split() with no argument: the runs of non-whitespace.
std::vector<std::u32string_view> python_split(std::u32string_view text);

// The version of Unicode the tables were generated from.
const char* unicode_version();

}  // namespace normgrad::text
