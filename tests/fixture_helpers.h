#pragma once
// Reading the JSON fixtures that the kept scripts in fixtures/ write with PyTorch or NumPy, and
// comparing results with them. Both sides compute in float64, so agreement is asked to about
// 1e-10 relative: anything looser would hide a wrong formula behind rounding.

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "helpers.h"

namespace testing {

using nlohmann::json;

inline constexpr double fixture_rtol = 1e-10;
// Values that are zero up to rounding on one side need a floor.
inline constexpr double fixture_atol = 1e-12;

// The parsed fixtures/<name>, read once per file.
inline const json& fixture_file(const char* name) {
  static std::map<std::string, json> parsed;
  auto found = parsed.find(name);
  if (found == parsed.end()) {
    std::ifstream file(std::string(NORMGRAD_FIXTURES_DIR) + "/" + name);
    REQUIRE(file.good());
    found = parsed.emplace(name, json::parse(file)).first;
  }
  return found->second;
}

// Checks `actual` (float64) against the fixture case's `key`, naming the key when it fails.
inline void check_fixture_close(const normgrad::Tensor& actual, const json& c, const char* key) {
  INFO("fixture key: " << key);
  REQUIRE(actual.defined());
  CHECK(actual.dtype() == normgrad::DType::Float64);
  CHECK(all_close(actual, c[key].get<std::vector<double>>(), fixture_rtol, fixture_atol));
}

}  // namespace testing
