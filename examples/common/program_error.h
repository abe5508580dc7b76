#pragma once
// How a program ends on an Error: its message on stderr, which says which program speaks,
// and exit status 1.
//
//   } catch (const normgrad::Error& error) {
//     return examples::print_program_error("attentive_reader", error);
//   }

#include <exception>
#include <string>

namespace examples {

// Prints `error`'s message, prefixed with "<program>: " unless it begins with the program's
// name already (most of the programs' own Errors do); returns 1.
int print_program_error(const std::string& program, const std::exception& error);

}  // namespace examples
