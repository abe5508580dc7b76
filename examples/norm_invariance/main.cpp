// The invariance lab: measures which transformations of weights and data leave each
// normaliser's output unchanged, prints the result in the layout of the RMSNorm paper's
// Table 1, and checks it against the paper. Then shows the gradient property of the paper's
// section 4.2: dL/dW shrinks as 1/delta when W grows by delta, and ignores the scale of x.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "invariance.h"

namespace {

void print_table(const std::vector<invariance::Row>& rows, bool details) {
  std::printf(
      "Table 1 by experiment (✓ = invariant: no output changed; ✗ = some output changed)\n\n| "
      "method |");
  for (int column = 0; column < invariance::kTransformations; ++column)
    std::printf(" %s |",
                invariance::column_title(static_cast<invariance::Transformation>(column)).c_str());
  std::printf("\n|---|");
  for (int column = 0; column < invariance::kTransformations; ++column) std::printf(":---:|");
  std::printf("\n");
  for (const auto& row : rows) {
    std::printf("| %s |", row.method.c_str());
    for (int column = 0; column < invariance::kTransformations; ++column) {
      if (details)
        std::printf(" %s (%.0e) |", row.invariant[column] ? "✓" : "✗", row.change[column]);
      else
        std::printf(" %s |", row.invariant[column] ? "✓" : "✗");
    }
    std::printf("\n");
  }
}

// Prints each cell that differs from the paper; returns how many do.
int compare_with_paper(const std::vector<invariance::Row>& rows) {
  const auto paper = invariance::paper_table();
  int differences = 0;
  for (std::size_t r = 0; r < rows.size(); ++r)
    for (int column = 0; column < invariance::kTransformations; ++column)
      if (rows[r].invariant[column] != paper[r][column]) {
        ++differences;
        std::printf(
            "  differs from the paper: %s, %s (measured change %.3g)\n", rows[r].method.c_str(),
            invariance::column_title(static_cast<invariance::Transformation>(column)).c_str(),
            rows[r].change[column]);
      }
  if (differences == 0) std::printf("\nAll 30 cells agree with the paper's Table 1.\n");
  return differences;
}

void print_gradient_scaling(double delta, const invariance::Settings& settings) {
  std::printf("\nGradient of L = sum(h * c) with respect to W (paper section 4.2, Eqs. 8-10)\n\n");
  std::printf(
      "| method | W' = %g W: ||dL/dW'|| / ||dL/dW|| | 1/delta | max deviation of %g dL/dW' from "
      "dL/dW "
      "| x' = %g x: ||dL/dW'|| / ||dL/dW|| | max deviation from dL/dW |\n",
      delta, delta, delta);
  std::printf("|---|---:|---:|---:|---:|---:|\n");
  for (const auto& g : invariance::measure_gradient_scaling(delta, settings))
    std::printf("| %s | %.6f | %.6f | %.1e | %.6f | %.1e |\n", g.method.c_str(),
                g.weight_scaled_ratio, 1.0 / delta, g.weight_scaled_deviation, g.input_scaled_ratio,
                g.input_scaled_deviation);
  std::printf(
      "\nScaling W by delta divides its gradient by delta (an implicit learning-rate\n"
      "adaptation); scaling the input leaves the gradient as it was.\n");
}

}  // namespace

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
  CLI11_PARSE(app, argc, argv);

  const auto rows = invariance::measure_table(settings);
  print_table(rows, details);
  const int differences = compare_with_paper(rows);
  print_gradient_scaling(delta, settings);
  return differences == 0 ? 0 : 1;
}
