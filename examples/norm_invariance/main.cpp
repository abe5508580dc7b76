// The invariance lab: measures which transformations of weights and data leave each
// normaliser's output unchanged, prints the result in the layout of the RMSNorm paper's
// Table 1, and checks it against the paper. Then shows the gradient property of the paper's
// section 4.2: dL/dW shrinks as 1/delta when W grows by delta, and ignores the scale of x.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "common/program_error.h"
#include "common/text_file.h"
#include "invariance.h"
#include "report.h"

int main(int argc, char** argv) {
  CLI::App app{"The invariance lab: Table 1 of the RMSNorm paper, computed by experiment"};
  invariance::Settings settings;
  double delta = 10;
  bool details = false;
  app.add_option("--seed", settings.seed, "seed for the random layer and data");
  app.add_option("--delta", delta, "the scale factor of the gradient experiment")
      ->check(CLI::PositiveNumber);
  app.add_option("--tolerance", settings.tolerance,
                 "largest relative change of the output still counted as none")
      ->check(CLI::PositiveNumber);
  app.add_flag("--details", details, "print the measured relative change in every cell");
  std::string out;
  app.add_option("--out", out, "also write report.md and table1.csv (one row per cell) there");
  CLI11_PARSE(app, argc, argv);

  const auto rows = invariance::measure_table(settings);
  const auto gradients = invariance::measure_gradient_scaling(delta, settings);
  std::printf(
      "Table 1 by experiment (✓ = invariant: no output changed; ✗ = some output changed)\n\n"
      "%s\n%s\nGradient of L = sum(h * c) with respect to W (paper section 4.2, Eqs. 8-10)\n\n"
      "%s",
      invariance::table_markdown(rows, details).c_str(),
      invariance::comparison_markdown(rows).c_str(),
      invariance::gradient_markdown(gradients, delta).c_str());
  if (!out.empty()) {
    try {
      examples::write_text_file(out + "/report.md",
                                invariance::report_markdown(rows, gradients, delta, settings),
                                "norm_invariance");
      examples::write_text_file(out + "/table1.csv", invariance::table_csv(rows),
                                "norm_invariance");
    } catch (const std::exception& error) {
      examples::print_program_error("norm_invariance", error);
      return 2;  // 1 says that a cell differs from the paper's
    }
    std::printf("\nreport: %s/report.md\n", out.c_str());
  }
  return invariance::differences_from_paper(rows) == 0 ? 0 : 1;
}
