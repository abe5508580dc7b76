#include "common/precision.h"

namespace examples {

namespace ng = normgrad;

const std::vector<std::string>& precision_names() {
  static const std::vector<std::string> names = {"float32", "bfloat16"};
  return names;
}

ng::DType activation_dtype(const std::string& precision, ng::DType parameters,
                           const std::string& program) {
  if (precision == "float32") return parameters;
  NG_CHECK(precision == "bfloat16", program, "precision must be float32 or bfloat16, got '",
           precision, "'");
  NG_CHECK(parameters == ng::DType::Float32, program,
           "bfloat16 activations need float32 parameters, got ", parameters);
  return ng::DType::BFloat16;
}

}  // namespace examples
