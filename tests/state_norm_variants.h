#pragma once
// The row norms the fused recurrent steps' tests run them with (test_recurrent.cpp,
// test_recurrent_sequence.cpp and their CUDA parity cases): every statistic, eps inside and outside
// the square root, pRMSNorm's partial statistic, with and without gain and bias; and helpers that
// let a gradient check vary the gains and biases.

#include <normgrad/normgrad.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace testing {

using namespace normgrad;

// One way of normalising both blocks of the state side.
struct Variant {
  std::string name;
  RowStatistic statistic = RowStatistic::MeanSquare;
  double partial = 1.0;  // MeanSquare: the share of each block that gives the statistic
  NormOptions options = {};
  bool gain = true, bias = false;
};

inline const std::vector<Variant> variants = {
    {.name = "layernorm", .statistic = RowStatistic::Variance, .bias = true},
    {.name = "rmsnorm"},
    {.name = "rmsnorm, eps outside the sqrt, with a bias",
     .options = {.eps = 1e-3, .placement = EpsPlacement::OutsideSqrt},
     .bias = true},
    {.name = "prmsnorm, p = 0.5", .partial = 0.5},
    {.name = "l2norm", .statistic = RowStatistic::SumOfSquares},
    {.name = "layernorm without gain or bias", .statistic = RowStatistic::Variance, .gain = false},
};

// The norm of one block of `width` values, its gain near 1 and bias near 0 drawn from `seed`.
inline RowNorm block_norm(const Variant& variant, std::int64_t width, DType dtype,
                          std::uint64_t seed) {
  Generator generator(seed);
  RowNorm norm{.statistic = variant.statistic, .options = variant.options};
  if (variant.partial < 1)
    norm.k = nn::partial_count(width, variant.partial, nn::PartialRounding::Ceil);
  if (variant.gain)
    norm.gain = (randn({width}, generator, {.dtype = dtype}) * 0.3 + 1.0).detach().requires_grad_();
  if (variant.bias)
    norm.bias = (randn({width}, generator, {.dtype = dtype}) * 0.1).detach().requires_grad_();
  return norm;
}

inline GruStateNorms state_norms(const Variant& variant, std::int64_t hidden, DType dtype) {
  return {block_norm(variant, 2 * hidden, dtype, 7), block_norm(variant, hidden, dtype, 8)};
}

// The gains and biases that are defined, in a fixed order.
inline std::vector<Tensor> affine_of(const GruStateNorms& norms) {
  std::vector<Tensor> parameters;
  for (const Tensor& t :
       {norms.gates.gain, norms.gates.bias, norms.candidate.gain, norms.candidate.bias})
    if (t.defined()) parameters.push_back(t);
  return parameters;
}

// The norms with their gains and biases taken from `in`, from index `first` on, in
// affine_of's order: so that a gradient check varies them.
inline GruStateNorms with_affine(GruStateNorms norms, const std::vector<Tensor>& in,
                                 std::size_t first) {
  for (Tensor* t :
       {&norms.gates.gain, &norms.gates.bias, &norms.candidate.gain, &norms.candidate.bias})
    if (t->defined()) *t = in[first++];
  return norms;
}

// The LSTM's: the state norm over 4H, the cell norm over H.
inline LstmStepNorms lstm_norms(const Variant& variant, std::int64_t hidden, DType dtype) {
  return {block_norm(variant, 4 * hidden, dtype, 9), block_norm(variant, hidden, dtype, 10)};
}

inline std::vector<Tensor> affine_of(const LstmStepNorms& norms) {
  std::vector<Tensor> parameters;
  for (const std::optional<RowNorm>* norm : {&norms.state, &norms.cell})
    if (norm->has_value())
      for (const Tensor& t : {(*norm)->gain, (*norm)->bias})
        if (t.defined()) parameters.push_back(t);
  return parameters;
}

inline LstmStepNorms with_affine(LstmStepNorms norms, const std::vector<Tensor>& in,
                                 std::size_t first) {
  for (std::optional<RowNorm>* norm : {&norms.state, &norms.cell})
    if (norm->has_value())
      for (Tensor* t : {&(*norm)->gain, &(*norm)->bias})
        if (t->defined()) *t = in[first++];
  return norms;
}

}  // namespace testing
