#pragma once
// Tables of Python's Unicode facts, generated into unicode_tables.cpp by
// scripts/generate_unicode_tables. Only unicode_text.cpp reads them.

#include <cstddef>

namespace normgrad::text::unicode_tables {

struct CodePointRange {
  char32_t first;
  char32_t last;  // inclusive
};

struct LowerMapping {
  char32_t from;
  char32_t to;
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
extern const LowerMapping lower[];
extern const std::size_t lower_size;
extern const LongLowerMapping long_lower[];
extern const std::size_t long_lower_size;

}  // namespace normgrad::text::unicode_tables
