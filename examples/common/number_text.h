#pragma once
// One number as text through a printf pattern: format_number("%.2f", 12.345) is "12.35". The
// programs' tables, CSV files and reports write their numbers with it.

#include <cstdio>
#include <string>

namespace examples {

inline std::string format_number(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

}  // namespace examples
