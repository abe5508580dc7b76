#pragma once
// Drawing with gnuplot from the example programs: the script is written beside the CSV it
// reads and run in that folder, so the pictures can be redrawn or restyled later by hand
// (`gnuplot <script>` there). A machine without gnuplot gets its CSV files and a message, never
// an error.

#include <optional>
#include <string>
#include <vector>

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

// The first lines of a script that draws from curves.csv: a comment naming `writer` (the
// program, or its subcommand) and how to run the script, `terminal` at `width` x `height` with
// plain (not enhanced) text, so that specs such as "prmsnorm:0.125,eps=1e-8" print as written,
// and the CSV separator.
std::string curves_script_header(const std::string& writer, const std::string& terminal, int width,
                                 int height);

// The file an image `name` is drawn to by `terminal`: name.svg for svg, else name.png.
std::string image_file(const std::string& name, const std::string& terminal);

// Draws a figure from the curves.csv that an experiment of `program` wrote in `folder`: writes
// curves.gp there, curves_script_header's lines and the output `name`.png (or .svg), followed
// by `body`, and runs gnuplot.
// Returns the image's file name; nullopt, with a message on stderr, when gnuplot is missing or
// fails (the CSV files are there either way).
std::optional<std::string> draw_curves(const std::string& folder, const std::string& program,
                                       const std::string& name, int width, int height,
                                       const std::string& body);

// A `plot` command of one curve per norm from curves.csv, whose column 1 names the norm: `x`
// against `y`, each a gnuplot using-expression such as "2" or "(100 * $6)".
std::string plot_per_norm(const std::vector<std::string>& norms, const std::string& x,
                          const std::string& y, const std::string& style = "linespoints");

}  // namespace examples
