#include "report.h"

#include <string>

#include "common/number_text.h"

namespace invariance {
namespace {

using examples::format_number;

std::string title(int column) { return column_title(static_cast<Transformation>(column)); }

}  // namespace

std::string table_markdown(const std::vector<Row>& rows, bool details) {
  const auto paper = paper_table();
  std::string text = "| method |", rule = "|---|";
  for (int column = 0; column < kTransformations; ++column) {
    text += " " + title(column) + " |";
    rule += ":---:|";
  }
  text += "\n" + rule + "\n";
  for (std::size_t r = 0; r < rows.size(); ++r) {
    text += "| " + rows[r].method + " |";
    for (int column = 0; column < kTransformations; ++column) {
      const bool invariant = rows[r].invariant[column];
      text += std::string(" ") + (invariant ? "✓" : "✗");
      if (invariant != paper[r][column])
        text += std::string(" (paper: ") + (invariant ? "✗)" : "✓)");
      if (details) text += format_number(" (%.0e)", rows[r].change[column]);
      text += " |";
    }
    text += "\n";
  }
  return text;
}

int differences_from_paper(const std::vector<Row>& rows) {
  const auto paper = paper_table();
  int differences = 0;
  for (std::size_t r = 0; r < rows.size(); ++r)
    for (int column = 0; column < kTransformations; ++column)
      if (rows[r].invariant[column] != paper[r][column]) ++differences;
  return differences;
}

std::string comparison_markdown(const std::vector<Row>& rows) {
  const auto paper = paper_table();
  const int cells = static_cast<int>(rows.size()) * kTransformations;
  const int differences = differences_from_paper(rows);
  if (differences == 0)
    return "All " + std::to_string(cells) + " cells agree with the paper's Table 1.\n";
  std::string text = std::to_string(differences) + " of " + std::to_string(cells) +
                     " cells differ from the paper's Table 1:\n\n";
  for (std::size_t r = 0; r < rows.size(); ++r)
    for (int column = 0; column < kTransformations; ++column)
      if (rows[r].invariant[column] != paper[r][column])
        text += "- " + rows[r].method + ", " + title(column) +
                format_number(": measured change %.3g\n", rows[r].change[column]);
  return text;
}

std::string gradient_markdown(const std::vector<GradientScaling>& rows, double delta) {
  const std::string d = format_number("%g", delta);
  std::string text = "| method | W' = " + d + " W: ‖dL/dW'‖ / ‖dL/dW‖ | 1/δ | max deviation of " +
                     d + " dL/dW' from dL/dW | x' = " + d +
                     " x: ‖dL/dW'‖ / ‖dL/dW‖ | max deviation from dL/dW |\n"
                     "|---|---:|---:|---:|---:|---:|\n";
  for (const auto& g : rows)
    text += "| " + g.method + " | " + format_number("%.6f", g.weight_scaled_ratio) + " | " +
            format_number("%.6f", 1.0 / delta) + " | " +
            format_number("%.1e", g.weight_scaled_deviation) + " | " +
            format_number("%.6f", g.input_scaled_ratio) + " | " +
            format_number("%.1e", g.input_scaled_deviation) + " |\n";
  text +=
      "\nScaling W by δ divides its gradient by δ (an implicit learning-rate adaptation); "
      "scaling the input leaves the gradient as it was.\n";
  return text;
}

std::string table_csv(const std::vector<Row>& rows) {
  const auto paper = paper_table();
  std::string text = "method,transformation,invariant,paper,change\n";
  for (std::size_t r = 0; r < rows.size(); ++r)
    for (int column = 0; column < kTransformations; ++column)
      text += rows[r].method + "," + title(column) + "," +
              (rows[r].invariant[column] ? "yes" : "no") + "," + (paper[r][column] ? "yes" : "no") +
              "," + format_number("%.3g", rows[r].change[column]) + "\n";
  return text;
}

std::string report_markdown(const std::vector<Row>& rows,
                            const std::vector<GradientScaling>& gradients, double delta,
                            const Settings& settings) {
  return "# The invariance lab: the RMSNorm paper's Table 1 by experiment\n\n"
         "One layer h = Norm(W x), W a random " +
         std::to_string(settings.units) + "×" + std::to_string(settings.inputs) +
         " weight and x a batch of " + std::to_string(settings.batch) +
         " random cases, in float64 with eps = 0, run as drawn and after each transformation. "
         "✓: no output changed by more than " +
         format_number("%g", settings.tolerance) +
         " of the largest output (invariant); ✗: some output changed more. The paper argues its "
         "table from the formulas; here every cell is measured.\n\n## Table 1\n\n" +
         table_markdown(rows, true) + "\n" + comparison_markdown(rows) +
         "\n## Gradients (the paper's section 4.2)\n\nL = sum(h ⊙ c) for a fixed random c.\n\n" +
         gradient_markdown(gradients, delta);
}

}  // namespace invariance
