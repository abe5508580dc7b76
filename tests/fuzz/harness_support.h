#pragma once
// What every harness shares: a private folder for the files a reader takes by path, the rule
// that a normgrad::Error is the only acceptable failure, and invariants that abort when broken.

#include <cstddef>
#include <string>

#include <normgrad/normgrad.h>

namespace normgrad::fuzz {

// This process's own folder (mkdtemp, mode 0700), removed at exit: no other process can
// plant a file or a link where a harness writes its input.
const std::string& scratch_folder();

// Writes `size` bytes to scratch_folder()/name and returns the path; aborts if it cannot,
// since a harness that does not write its input tests nothing.
std::string write_scratch_file(const std::string& name, const void* data, std::size_t size);

// An invariant that must hold: a failure aborts, which the fuzzer reports with its input.
void require(bool condition, const char* what);

// An array read_idx returned must hold exactly the values its dims promise.
void require_values_fill_shape(const data::IdxArray& array);

// Runs `body`, accepting normgrad::Error as the only failure. Every other exception
// propagates: libFuzzer reports it (an uncaught exception aborts), and the regression test
// sees it thrown.
template <typename Body> int accept_errors(Body&& body) {
  try {
    body();
  } catch (const Error&) {
  }
  return 0;
}

}  // namespace normgrad::fuzz
