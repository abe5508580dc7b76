#include "common/validated_run.h"

#include <cmath>

namespace examples {

void check_step_training(const StepTraining& t, const std::string& program) {
  NG_CHECK(t.steps >= 1, program, "--steps must be at least 1, got ", t.steps);
  NG_CHECK(t.valid_every >= 1, program, "--valid-every must be at least 1, got ", t.valid_every);
  NG_CHECK(t.learning_rate > 0 && std::isfinite(t.learning_rate), program,
           "--lr must be positive, got ", t.learning_rate);
  NG_CHECK(t.clip >= 0 && std::isfinite(t.clip), program,
           "--clip must be 0 (none) or positive, got ", t.clip);
}

}  // namespace examples
