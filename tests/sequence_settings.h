#pragma once
// What the tests of the one-op recurrent loops (test_gru_sequence.cpp, test_lstm_sequence.cpp)
// share: the settings they run every norm under, with the mask or packed batch sizes of each;
// a cell that never runs its loop as one op, so that a layer of it steps; and the checks that
// hold the op to the steps it replaces.

#include <normgrad/normgrad.h>

#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "helpers.h"

namespace testing {

using namespace normgrad;

struct SequenceSetting {
  std::string name;
  bool masked = false, dropout = false, reverse = false, bias = true, packed = false;
};

inline const std::vector<SequenceSetting> sequence_settings = {
    {"plain"},
    {"masked", true},
    {"state dropout", false, true},
    {"reversed and masked", true, false, true},
    {"without b_hh, reversed, with dropout", false, true, true, false},
    {"packed", false, false, false, true, true},
    {"packed, reversed, with dropout", false, true, true, true, true},
};

// The settings' sizes: 5 steps of 3 rows.
inline constexpr std::int64_t setting_steps = 5, setting_batch = 3;

// Packed batch sizes for those 5 steps, one of them running no row.
inline const std::vector<std::int64_t> packed_sizes = {3, 2, 2, 0, 1};

// The mask [T, B] that says what batch sizes say: each step's first sizes[t] rows.
inline Tensor prefix_mask(const std::vector<std::int64_t>& sizes, std::int64_t batch, DType dtype) {
  std::vector<double> values;
  for (const std::int64_t count : sizes)
    for (std::int64_t row = 0; row < batch; ++row) values.push_back(row < count ? 1 : 0);
  return from_vector(values, {std::ssize(sizes), batch}).to(dtype);
}

// A setting's mask for the step-by-step path: its own, packed_sizes' prefix mask, or none.
inline Tensor setting_mask(const SequenceSetting& setting, DType dtype) {
  if (setting.masked)
    return tensor({{1, 1, 1}, {1, 0, 1}, {1, 0, 1}, {0, 0, 1}, {0, 0, 1}}, {.dtype = dtype});
  if (setting.packed) return prefix_mask(packed_sizes, setting_batch, dtype);
  return Tensor();
}

// The options that run a setting as one op, with the mask setting_mask gave.
inline SequenceOptions setting_options(const SequenceSetting& setting,
                                                       const Tensor& mask, const Tensor& dropout) {
  return {.mask = setting.packed ? Tensor() : mask,
          .batch_sizes = setting.packed ? packed_sizes : std::vector<std::int64_t>{},
          .state_dropout = dropout,
          .reverse = setting.reverse};
}

// A cell that never runs its loop as one op: a layer of it steps, masked or packed.
template <class Cell> class SteppedCell : public Cell {
 public:
  using Cell::Cell;
  std::optional<std::vector<Tensor>> run_sequence(const Tensor&, const std::vector<Tensor>&,
                                                  const SequenceOptions&) override {
    return std::nullopt;
  }
};

// A layer of `Cell`s from 3 inputs to 4 units, its parameters drawn from a generator seeded
// alike for every layer.
template <class Cell> nn::Recurrent layer_of(const nn::RecurrentOptions& options) {
  auto generator = std::make_shared<Generator>(12);
  return nn::Recurrent([=] { return std::make_shared<Cell>(3, 4, options.cell, *generator); },
                       options);
}

// Holds the states of a loop run as one op to those of `stepped`, the same loop step by step,
// and the gradients both send to `inputs` from the upstream gradient dy. The states are equal
// bit for bit (to rounding when packed: a step's product is then over its running rows, a GEMM
// of another height, which a BLAS may block differently); the gradients to rounding, as the
// sums over steps (W_hh's, b_hh's, the gains' and every dh) run in another order.
inline void check_against_steps(const Tensor& one_op, const std::function<Tensor()>& stepped,
                                const std::vector<Tensor>& inputs, const Tensor& dy, bool packed) {
  one_op.backward(dy);
  std::vector<Tensor> one_op_grads;
  for (Tensor t : inputs) {
    one_op_grads.push_back(t.grad());
    t.zero_grad();
  }
  const Tensor steps = stepped();
  steps.backward(dy);
  const double tolerance = one_op.dtype() == DType::Float32 ? 1e-5 : 1e-13;
  const double value_tolerance = packed ? tolerance : 0;
  CHECK(all_close(one_op, steps, value_tolerance, value_tolerance));
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    INFO("gradient of input " << i);
    REQUIRE(one_op_grads[i].defined());
    CHECK(all_close(one_op_grads[i], inputs[i].grad(), tolerance, tolerance));
  }
}

// Holds two float64 layers to each other: the outputs `run` gives of each, bit for bit, and the
// gradients of `inputs` and of every parameter from one weighted sum of those outputs, to
// 1e-13.
inline void check_layers_agree(nn::Recurrent& one_op, nn::Recurrent& stepped,
                               const std::function<std::vector<Tensor>(nn::Recurrent&)>& run,
                               const std::vector<Tensor>& inputs) {
  const std::vector<Tensor> a = run(one_op), b = run(stepped);
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(all_close(a[i], b[i], 0, 0));
  std::vector<Tensor> weights;
  for (std::size_t i = 0; i < a.size(); ++i) weights.push_back(leaf(a[i].shape(), 17 + i).detach());
  const auto gradients = [&](nn::Recurrent& layer, const std::vector<Tensor>& outputs) {
    for (Tensor t : inputs) t.zero_grad();
    Tensor loss = zeros({}, {.dtype = DType::Float64});
    for (std::size_t i = 0; i < outputs.size(); ++i) loss = loss + sum(outputs[i] * weights[i]);
    loss.backward();
    std::vector<Tensor> grads;
    for (const Tensor& t : inputs) grads.push_back(t.grad().clone());
    for (const Tensor& parameter : layer.parameters()) grads.push_back(parameter.grad());
    return grads;
  };
  const std::vector<Tensor> from_one_op = gradients(one_op, a),
                            from_stepped = gradients(stepped, b);
  REQUIRE(from_one_op.size() == from_stepped.size());
  for (std::size_t i = 0; i < from_one_op.size(); ++i) {
    INFO("gradient " << i);
    CHECK(all_close(from_one_op[i], from_stepped[i], 1e-13, 1e-13));
  }
}

}  // namespace testing
