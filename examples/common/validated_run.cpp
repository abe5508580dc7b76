#include "common/validated_run.h"

namespace examples {

void check_validated_state(const std::string& path, const std::string& program, std::int64_t steps,
                           std::int64_t last_record, std::int64_t max_steps) {
  NG_CHECK(last_record > 0 && last_record == steps, program, "'", path,
           "' records validations up to step ", last_record, " but says ", steps,
           " steps were done");
  NG_CHECK(steps <= max_steps, program, "'", path, "' has ", steps,
           " steps done, more than --steps ", max_steps);
}

std::int64_t count_parameters(const normgrad::nn::Module& model) {
  std::int64_t count = 0;
  for (const normgrad::Tensor& parameter : model.parameters()) count += parameter.numel();
  return count;
}

}  // namespace examples
