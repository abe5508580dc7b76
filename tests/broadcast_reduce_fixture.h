#pragma once
// The NumPy fixture of broadcasting and reductions (fixtures/generate_broadcast_reduce.py writes
// fixtures/broadcast_reduce.json), which the elementwise and reduce families' tests read.

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "helpers.h"

namespace testing::broadcast_reduce {

inline nlohmann::json load_fixture() {
  std::ifstream file(std::string(NORMGRAD_FIXTURES_DIR) + "/broadcast_reduce.json");
  REQUIRE(file.good());
  return nlohmann::json::parse(file);
}

inline normgrad::Tensor from_json(const nlohmann::json& values, const nlohmann::json& shape,
                                  normgrad::DType dtype) {
  return normgrad::from_vector(values.get<std::vector<double>>(), shape.get<normgrad::Shape>())
      .to(dtype);
}

}  // namespace testing::broadcast_reduce
