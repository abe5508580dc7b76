#pragma once
// CLI11 checks for numeric flags whose messages say the range plainly: CLI11's own
// PositiveNumber names it as 0 to the largest double, all 309 digits of it.
//
//   command->add_option("--width", width, "...")->check(examples::kPositive);

#include <CLI/CLI.hpp>
#include <exception>
#include <string>

namespace examples {

// Whether `input` is a number (the whole of it) that `accept` takes.
template <class Accept>
CLI::Validator number_check(Accept accept, const char* wanted, const char* name) {
  return CLI::Validator(
      [accept, wanted](std::string& input) -> std::string {
        try {
          std::size_t used = 0;
          if (accept(std::stod(input, &used)) && used == input.size()) return "";
        } catch (const std::exception&) {
        }
        return std::string("must be ") + wanted + ", got '" + input + "'";
      },
      name);
}

inline const CLI::Validator kPositive =
    number_check([](double value) { return value > 0; }, "a positive number", "POSITIVE");
inline const CLI::Validator kNonNegative =
    number_check([](double value) { return value >= 0; }, "a number >= 0", "NONNEGATIVE");

}  // namespace examples
