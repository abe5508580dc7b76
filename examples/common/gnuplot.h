#pragma once
// Drawing with gnuplot from the example programs: the script is written beside the CSV it
// reads and run in that folder, so the pictures can be redrawn or restyled later by hand
// (`gnuplot <script>` there). A machine without gnuplot gets its CSV files and a message, never
// an error.

#include <optional>
#include <string>

namespace examples {

// The first of pngcairo, png and svg that this machine's gnuplot offers; nullopt when gnuplot
// is missing or offers none of them.
std::optional<std::string> find_gnuplot_terminal();

// A gnuplot string literal in double quotes.
std::string gnuplot_quoted(const std::string& text);

// A word for sh, in single quotes.
std::string shell_quoted(const std::string& text);

struct GnuplotRun {
  bool ok = false;
  std::string output;  // what gnuplot printed: its complaints, or warnings when ok
};

// Writes `script` to <folder>/<script_name> and runs gnuplot on it in `folder`. Throws
// normgrad::Error when the script cannot be written.
GnuplotRun run_gnuplot(const std::string& folder, const std::string& script_name,
                       const std::string& script);

}  // namespace examples
