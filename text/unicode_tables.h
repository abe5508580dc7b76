#pragma once
// Tables of Python's Unicode facts, generated into unicode_tables.cpp by
// scripts/generate_unicode_tables. Only unicode_text.cpp reads them.

#include <cstddef>

namespace normgrad::text::unicode_tables {

struct CodePointRange {
  char32_t first;
  char32_t last;  // inclusive
};

// The code points first, first + stride, ..., last, each of whose str.lower() is itself + delta.
struct LowerRun {
  char32_t first;
  char32_t last;  // inclusive
  char32_t stride;
  int delta;
};

struct LongLowerMapping {
  char32_t from;
  char32_t to[2];
};

extern const char* const unicode_version;
extern const CodePointRange whitespace[];
extern const std::size_t whitespace_size;
extern const CodePointRange cased[];
extern const std::size_t cased_size;
extern const CodePointRange case_ignorable[];
extern const std::size_t case_ignorable_size;
extern const LowerRun lower[];
extern const std::size_t lower_size;
extern const LongLowerMapping long_lower[];
extern const std::size_t long_lower_size;

}  // namespace normgrad::text::unicode_tables
