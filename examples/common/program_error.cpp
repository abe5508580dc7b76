#include "common/program_error.h"

#include <cstdio>

namespace examples {

int print_program_error(const std::string& program, const std::exception& error) {
  const std::string message = error.what();
  const bool named = message.rfind(program, 0) == 0;
  std::fprintf(stderr, "%s%s\n", named ? "" : (program + ": ").c_str(), message.c_str());
  return 1;
}

}  // namespace examples
