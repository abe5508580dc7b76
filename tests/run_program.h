#pragma once
// Running a program as a user would, for the tests of the command-line tools and examples.

#include <doctest/doctest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

namespace testing {

struct ProgramResult {
  int status = -1;     // the exit status; -1 when the program did not exit normally
  std::string output;  // stdout and stderr together
};

// Runs `command` through the shell and waits for it.
inline ProgramResult run_program(const std::string& command) {
  ProgramResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe) != nullptr) result.output += buffer.data();
  const int status = pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// Checks that `program arguments` is refused before any work: a non-zero exit, `message` in
// what it printed, and nothing at `untouched` (where the run would have written).
inline void check_refused(const std::string& program, const std::string& arguments,
                          const char* message, const std::string& untouched) {
  const ProgramResult result = run_program(program + " " + arguments);
  INFO(arguments << "\n" << result.output);
  CHECK(result.status != 0);
  CHECK(result.output.find(message) != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(untouched));
}

}  // namespace testing
