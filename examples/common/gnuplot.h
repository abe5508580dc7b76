#pragma once
// Drawing with gnuplot from the example programs: the script is written beside the CSV it
// reads and run in that folder, so the pictures can be redrawn or restyled later by hand
// (`gnuplot <script>` there). A machine without gnuplot gets its CSV files and a message, never
// an error.

#include <functional>
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

// One curve of a plot from curves.csv: the rows it takes, as a gnuplot condition ("$1 == 3"),
// its line type (the colour, which a run keeps in every panel) and its key.
struct Curve {
  std::string rows;
  int line_type = 1;
  std::string title;
};

// A `plot` of column `y` of curves.csv against column `x`, a line in `style` per curve. Each
// curve takes its rows (with `measured_only`, only those where y holds a value: the columns
// measured at validations); every other row gives NaN for both x and y, so that it neither
// draws nor stretches the axes.
std::string plot_curves(const std::vector<Curve>& curves, int x, int y, bool measured_only,
                        const std::string& style);

// A script that draws figures, and the image files it writes (relative to its folder).
struct FigureScript {
  std::string text{};  // initialised, so that a script may be started from its files alone
  std::vector<std::string> files;
};

struct FiguresOutcome {
  std::vector<std::string> files;  // the images drawn, relative to the folder; none on failure
  std::string message;             // why none were drawn, or gnuplot's warnings
};

// Finds a terminal, writes the script `script_for(terminal)` gives to <folder>/<script_name>
// beside the CSV it reads, and runs gnuplot on it. Without gnuplot, writes no script and says
// so in the outcome; never throws for that.
FiguresOutcome draw_figures(
    const std::string& folder, const std::string& script_name,
    const std::function<FigureScript(const std::string& terminal)>& script_for);

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
