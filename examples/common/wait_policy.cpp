#include "wait_policy.h"

#include <unistd.h>

#include <cstdlib>

namespace examples {

void default_to_passive_waiting(char** argv, const char* program) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr)
    return;  // the user chose
  if (::setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
  ::execv(program, argv);
  // Only reached when the program could not be run again: it goes on with the default policy.
  ::unsetenv("OMP_WAIT_POLICY");
}

}  // namespace examples
