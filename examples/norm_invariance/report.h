#pragma once
// What the invariance lab prints and writes: Table 1 as measured, each cell beside the
// paper's, and the gradient property, as markdown (stdout and report.md) and as CSV
// (table1.csv, one row per cell).

#include <string>
#include <vector>

#include "invariance.h"

namespace invariance {

// The measured table in the paper's layout: ✓ invariant, ✗ not; a cell that differs from the
// paper's adds what the paper says; `details` adds every cell's measured relative change.
std::string table_markdown(const std::vector<Row>& rows, bool details);

// The number of cells that differ from the paper's Table 1.
int differences_from_paper(const std::vector<Row>& rows);

// One line per differing cell, or the line saying that all agree.
std::string comparison_markdown(const std::vector<Row>& rows);

// The gradient table of the paper's section 4.2 and what it shows.
std::string gradient_markdown(const std::vector<GradientScaling>& rows, double delta);

// method,transformation,invariant,paper,change: one row per cell, "yes" or "no".
std::string table_csv(const std::vector<Row>& rows);

// report.md: a title, how the cells were measured, the table, the comparison, the gradients.
std::string report_markdown(const std::vector<Row>& rows,
                            const std::vector<GradientScaling>& gradients, double delta,
                            const Settings& settings);

}  // namespace invariance
