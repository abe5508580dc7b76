#include "invariance.h"

#include <normgrad/normgrad.h>

#include <cmath>

namespace invariance {

namespace {

using namespace normgrad;

struct Method {
  const char* name;
  const char* spec;  // for the factory; WeightNorm acts on the weight instead
};

// Table 1's rows, in its order. eps = 0 everywhere: the transformations are exact
// symmetries of the formulas without eps, and a nonzero eps would blur them by ~eps.
constexpr Method kMethods[] = {
    {"BatchNorm", "batchnorm,eps=0"},      {"WeightNorm", "weightnorm"},
    {"LayerNorm", "layernorm,eps=0"},      {"RMSNorm", "rmsnorm,eps=0"},
    {"pRMSNorm", "prmsnorm:0.0625,eps=0"},
};

// One draw of everything the experiment needs.
struct Draw {
  Tensor weight;        // W (or WeightNorm's v): [units, inputs]
  Tensor data;          // x: [batch, inputs]
  Tensor unit_gain;     // WeightNorm's g: [units], positive
  Tensor shift;         // gamma for the re-centerings: [inputs]
  Tensor unit_factors;  // delta_i for weight-vector re-scaling: [units, 1], in [0.5, 4)
  double factor = 3.7;  // delta for the other re-scalings
};

Draw draw(const Settings& settings) {
  Generator generator(settings.seed);
  const TensorOptions f64{.dtype = DType::Float64};
  Draw d;
  d.weight = randn({settings.units, settings.inputs}, generator, f64);
  d.data = randn({settings.batch, settings.inputs}, generator, f64);
  d.unit_gain = rand({settings.units}, generator, f64) + 0.5;
  d.shift = randn({settings.inputs}, generator, f64) * 2.0;
  d.unit_factors = rand({settings.units, 1}, generator, f64) * 3.5 + 0.5;
  return d;
}

// The layer's outputs [batch, units]; normalisers use batch statistics (training mode).
Tensor layer(const Method& method, const Tensor& weight, const Tensor& data,
             const Tensor& unit_gain) {
  if (nn::NormSpec::parse(method.spec).reparameterises_weight())
    return matmul(data, nn::weight_norm(weight, unit_gain).t());
  const auto norm =
      nn::make_norm(method.spec, weight.size(0), nn::NormLayout::Features, DType::Float64);
  norm->train();
  return norm->forward(matmul(data, weight.t()));
}

// (W', x') for one transformation.
std::pair<Tensor, Tensor> transform(Transformation transformation, const Draw& d) {
  switch (transformation) {
    case Transformation::WeightMatrixRescaling:
      return {d.weight * d.factor, d.data};
    case Transformation::WeightMatrixRecentering:
      return {d.weight + d.shift, d.data};
    case Transformation::WeightVectorRescaling:
      return {d.weight * d.unit_factors, d.data};
    case Transformation::DatasetRescaling:
      return {d.weight, d.data * d.factor};
    case Transformation::DatasetRecentering:
      return {d.weight, d.data + d.shift};
    case Transformation::SingleCaseRescaling: {
      Tensor data = d.data.clone();
      data.narrow(0, 0, 1).mul_(d.factor);
      return {d.weight, data};
    }
  }
  return {d.weight, d.data};
}

double max_abs(const Tensor& t) { return abs(t).max().item(); }
double frobenius(const Tensor& t) { return std::sqrt(square(t).sum().item()); }

// dL/dW for L = sum(h * c).
Tensor weight_gradient(const Method& method, const Tensor& weight, const Tensor& data,
                       const Tensor& upstream) {
  Tensor w = weight.detach().clone().requires_grad_();
  (layer(method, w, data, Tensor()) * upstream).sum().backward();
  return w.grad();
}

}  // namespace

std::string column_title(Transformation transformation) {
  // In the order of the enum, which is the paper's.
  static const char* const titles[kTransformations] = {
      "weight matrix re-scaling", "weight matrix re-centering", "weight vector re-scaling",
      "dataset re-scaling",       "dataset re-centering",       "single training case re-scaling"};
  return titles[static_cast<int>(transformation)];
}

std::vector<Row> measure_table(const Settings& settings) {
  NoGradGuard no_grad;
  const Draw d = draw(settings);
  std::vector<Row> rows;
  for (const Method& method : kMethods) {
    Row row{method.name, method.spec};
    const Tensor before = layer(method, d.weight, d.data, d.unit_gain);
    for (int column = 0; column < kTransformations; ++column) {
      const auto [weight, data] = transform(static_cast<Transformation>(column), d);
      const Tensor after = layer(method, weight, data, d.unit_gain);
      row.change[column] = max_abs(after - before) / max_abs(before);
      row.invariant[column] = row.change[column] <= settings.tolerance;
    }
    rows.push_back(row);
  }
  return rows;
}

std::vector<std::array<bool, kTransformations>> paper_table() {
  constexpr bool Y = true, N = false;
  return {
      {Y, N, Y, Y, Y, N},  // BatchNorm
      {Y, N, Y, N, N, N},  // WeightNorm
      {Y, Y, N, Y, N, Y},  // LayerNorm
      {Y, N, N, Y, N, Y},  // RMSNorm
      {Y, N, N, Y, N, Y},  // pRMSNorm
  };
}

std::vector<GradientScaling> measure_gradient_scaling(double delta, const Settings& settings) {
  const Draw d = draw(settings);
  Generator generator(settings.seed + 1);
  const Tensor upstream =
      randn({settings.batch, settings.units}, generator, {.dtype = DType::Float64});
  std::vector<GradientScaling> results;
  for (const Method& method : {kMethods[3], kMethods[4], kMethods[2]}) {
    const Tensor base = weight_gradient(method, d.weight, d.data, upstream);
    const Tensor scaled_weight = weight_gradient(method, d.weight * delta, d.data, upstream);
    const Tensor scaled_input = weight_gradient(method, d.weight, d.data * delta, upstream);
    const double scale = max_abs(base);
    results.push_back({
        .method = method.name,
        .delta = delta,
        .weight_scaled_ratio = frobenius(scaled_weight) / frobenius(base),
        .weight_scaled_deviation = max_abs(scaled_weight * delta - base) / scale,
        .input_scaled_ratio = frobenius(scaled_input) / frobenius(base),
        .input_scaled_deviation = max_abs(scaled_input - base) / scale,
    });
  }
  return results;
}

}  // namespace invariance
