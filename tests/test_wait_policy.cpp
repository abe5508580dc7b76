// examples/common/wait_policy.h: the example programs run again with OMP_WAIT_POLICY=passive
// unless the environment already chose a policy. Each case runs in a child process, which
// executes a shell in place of the program to report the environment it was given.

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "common/wait_policy.h"
#include "helpers.h"

namespace {

// Forks; the child sets `variable` (unless null), calls default_to_passive_waiting with a
// shell command as the program, and exits 99 if no exec happened. Returns the child's status.
int run_child(const char* variable, const char* value, const char* command) {
  const pid_t child = ::fork();
  if (child == 0) {
    ::unsetenv("OMP_WAIT_POLICY");
    ::unsetenv("GOMP_SPINCOUNT");
    if (variable != nullptr) ::setenv(variable, value, 1);
    char* argv[] = {const_cast<char*>("sh"), const_cast<char*>("-c"), const_cast<char*>(command),
                    nullptr};
    examples::default_to_passive_waiting(argv, "/bin/sh");
    ::_exit(99);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("the examples run again with passive waiting unless a policy is set") {
  const char* passive = R"(test "$OMP_WAIT_POLICY" = passive && exit 7)";
  CHECK(run_child(nullptr, nullptr, passive) == 7);  // nothing set: runs again, passive
  CHECK(run_child("OMP_WAIT_POLICY", "active", passive) == 99);  // the user's choice stays
  CHECK(run_child("GOMP_SPINCOUNT", "1000", passive) == 99);
}
