#pragma once
// The invariance lab: Table 1 of the RMSNorm paper (its section 4.1), computed by
// experiment instead of by argument.
//
// One layer h = Norm(W x), with W a [units, inputs] weight and x a batch of cases, is run
// once as drawn and once after a transformation of its weights or data. The normaliser is
// invariant to that transformation when every output stays the same (to round-off). For
// WeightNorm the layer is h = (g v / ||v||) x, and the transformations act on v.
//
// Also the gradient property of the paper's section 4.2: dL/dW scales as 1/delta when W is
// scaled by delta, and does not change when x is.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace invariance {

// The columns of Table 1, in the paper's order.
enum class Transformation {
  WeightMatrixRescaling,    // W' = delta W
  WeightMatrixRecentering,  // W' = W + 1 gamma^T: the same vector added to every row
  WeightVectorRescaling,    // w_i' = delta_i w_i: each unit's weights by its own factor
  DatasetRescaling,         // x' = delta x for every case
  DatasetRecentering,       // x' = x + gamma for every case
  SingleCaseRescaling,      // x_1' = delta x_1, the other cases unchanged
};
inline constexpr int kTransformations = 6;
std::string column_title(Transformation transformation);

struct Settings {
  std::int64_t batch = 16;
  std::int64_t inputs = 24;
  std::int64_t units = 32;  // pRMSNorm at p = 6.25% then uses k = 2 of them
  std::uint64_t seed = 2019;
  double tolerance = 1e-9;  // largest relative change still counted as invariant
};

struct Row {
  std::string method;  // as in the paper: "BatchNorm", ..., "pRMSNorm"
  std::string spec;    // what the factory was given
  // For each transformation: the largest change of any output, relative to the largest
  // output, and whether that is within the tolerance.
  std::array<double, kTransformations> change{};
  std::array<bool, kTransformations> invariant{};
};

// The rows of Table 1 in the paper's order: BatchNorm, WeightNorm, LayerNorm, RMSNorm,
// pRMSNorm (p = 6.25%). All in float64 with eps = 0, so round-off is all that remains.
std::vector<Row> measure_table(const Settings& settings = {});

// The paper's Table 1, row by row (true = invariant), for comparison.
std::vector<std::array<bool, kTransformations>> paper_table();

struct GradientScaling {
  std::string method;
  double delta = 0;
  // ||dL/dW|| after W' = delta W, over ||dL/dW|| before: the paper predicts 1 / delta.
  double weight_scaled_ratio = 0;
  // Largest elementwise deviation of delta * dL/dW' from dL/dW, relative to max |dL/dW|.
  double weight_scaled_deviation = 0;
  // ||dL/dW|| after x' = delta x, over the same before: the paper predicts 1.
  double input_scaled_ratio = 0;
  double input_scaled_deviation = 0;  // elementwise, as above
};

// For RMSNorm, pRMSNorm and LayerNorm, with L = sum(h * c) for a fixed random c.
std::vector<GradientScaling> measure_gradient_scaling(double delta, const Settings& settings = {});

}  // namespace invariance
