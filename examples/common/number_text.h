#pragma once
// Numbers as text. format_number("%.2f", 12.345) is "12.35": the programs' tables, CSV files
// and reports write their numbers with it. format_duration(3725) is "1h02m": the time left on
// their progress lines.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace examples {

inline std::string format_number(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

// "1h02m", "4m05s", "12s"; a negative duration is 0 s.
inline std::string format_duration(double seconds) {
  const auto total = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  char text[32];
  if (total >= 3600)
    std::snprintf(text, sizeof text, "%lldh%02lldm", total / 3600, total % 3600 / 60);
  else if (total >= 60)
    std::snprintf(text, sizeof text, "%lldm%02llds", total / 60, total % 60);
  else
    std::snprintf(text, sizeof text, "%llds", total);
  return text;
}

}  // namespace examples
