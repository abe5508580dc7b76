#include "nn/gru_sequence.h"

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "autograd/primitives.h"
#include "autograd/record.h"
#include "core/error.h"
#include "core/tensor_internal.h"
#include "nn/mixed_precision.h"
#include "nn/recurrent_kernel_args.h"

namespace normgrad::nn::functional {

namespace {

using detail::ref;
using kernel_args::optional_ref;

constexpr const char* op = "gru_sequence";

// The checked operands and their shapes.
struct Sizes {
  std::int64_t steps, batch, hidden;
};

Sizes check_sequence(const Tensor& x, const Tensor& h0, const Tensor& weight, const Tensor& bias,
                     const Tensor& mask, const Tensor& state_dropout) {
  NG_CHECK(x.defined() && h0.defined() && weight.defined(), op,
           "input_side, h0 and weight_hh must be defined");
  autograd::primitive::check_floating(x, op);
  NG_CHECK(h0.dim() == 2, op, "h0 must be [batch, hidden], got ", h0.shape());
  const std::int64_t batch = h0.size(0), hidden = h0.size(1);
  NG_CHECK(x.dim() == 3 && x.size(0) > 0 && x.size(1) == batch && x.size(2) == 3 * hidden, op,
           "input_side must be [steps > 0, ", batch, ", ", 3 * hidden, "] for h0 ", h0.shape(),
           ", got ", x.shape());
  NG_CHECK(weight.shape() == Shape({3 * hidden, hidden}), op, "weight_hh must be [", 3 * hidden,
           ", ", hidden, "], got ", weight.shape());
  NG_CHECK(!bias.defined() || bias.shape() == Shape{3 * hidden}, op, "bias_hh must be [",
           3 * hidden, "], got ", bias.shape());
  for (const Tensor* t : {&h0, &weight, &bias}) {
    if (!t->defined()) continue;
    autograd::primitive::check_same_dtype(x, *t, op);
    autograd::primitive::check_same_device(x, *t, op);
  }
  const std::int64_t steps = x.size(0);
  NG_CHECK(!mask.defined() || mask.shape() == Shape({steps, batch}), op, "mask must be [", steps,
           ", ", batch, "], got ", mask.shape());
  NG_CHECK(!state_dropout.defined() || state_dropout.shape() == h0.shape(), op,
           "state_dropout must be ", h0.shape(), ", got ", state_dropout.shape());
  for (const Tensor* t : {&mask, &state_dropout})
    if (t->defined()) autograd::primitive::check_same_device(x, *t, op);
  return {steps, batch, hidden};
}

// What backward reads, beside the saved tensors.
struct Plan {
  Sizes sizes{};
  bool reverse = false, normed = false;
  backend::GruStateNorms norms{};       // NormParams only; the gains are saved
  std::array<bool, 4> affine_wanted{};  // gradients of [gates gain, bias, candidate gain, bias]
  bool weight_wanted = false, bias_wanted = false;
};

// The step at position i of the loop.
std::int64_t step_at(const Plan& plan, std::int64_t i) {
  return plan.reverse ? plan.sizes.steps - 1 - i : i;
}

// The state that the step at position i reads: h0 first, then the previous position's.
Tensor state_read(const Plan& plan, std::int64_t i, const Tensor& h0, const Tensor& states) {
  return i == 0 ? h0 : states.select(0, step_at(plan, i - 1));
}

// Saved tensors, by position.
enum Saved : std::size_t {
  kStates,
  kProjections,
  kActivations,
  kNormalised,
  kStatistics,
  kH0,
  kMask,
  kDropout,
  kProjected,
  kWeight,
  kGain0,
  kBias0,
  kGain1,
  kBias1,
  kSavedCount
};

autograd::Grads backward(const Plan& plan, const Tensor& d_states,
                         const autograd::SavedTensors& saved) {
  const auto [steps, batch, hidden] = plan.sizes;
  const Tensor upstream = d_states.contiguous();
  backend::Backend& kernels = detail::backend_of(upstream);
  const DType dtype = upstream.dtype();
  const Device device = upstream.device();
  const auto make = [&](Shape shape) { return detail::make_tensor(shape, dtype, device); };
  const Tensor& states = saved[kStates];
  const Tensor& projections = saved[kProjections];
  const Tensor& mask = saved[kMask];
  const Tensor& dropout = saved[kDropout];
  const Tensor& weight = saved[kWeight];

  Tensor d_input = make({steps, batch, 3 * hidden});
  Tensor d_projections = make({steps, batch, 3 * hidden});
  Tensor carry = zeros({batch, hidden}, {.dtype = dtype, .device = device});  // dL/dh from later
  Tensor d_h = make({batch, hidden});
  Tensor scratch = dropout.defined() ? make({batch, hidden}) : Tensor();
  // The gains' and biases' gradients of each step, summed over steps at the end.
  std::array<Tensor, 4> affine_steps;
  const std::int64_t widths[4] = {2 * hidden, 2 * hidden, hidden, hidden};
  for (int i = 0; i < 4; ++i)
    if (plan.affine_wanted[i]) affine_steps[i] = make({steps, widths[i]});

  std::array<backend::TensorRef, 4> parameter_refs, grad_refs;
  const backend::GruStateNorms step_norms = kernel_args::with_affine(
      plan.norms, std::span<const Tensor, 4>(saved.begin() + kGain0, 4), parameter_refs);

  for (std::int64_t i = steps; i-- > 0;) {
    const std::int64_t t = step_at(plan, i);
    const Tensor h_prev = state_read(plan, i, saved[kH0], states);
    const Tensor step_mask = mask.defined() ? mask.select(0, t) : Tensor();
    backend::TensorRef mask_ref;
    kernels.binary(backend::BinaryOp::Add, ref(d_h), ref(upstream.select(0, t)), ref(carry), 0);
    // dgx, dgh and the cell's part of dh_prev (into carry, which d_h has consumed)
    if (plan.normed) {
      std::array<Tensor, 4> step_grads;  // this step's row of each wanted gradient
      for (int k = 0; k < 4; ++k)
        if (plan.affine_wanted[k]) step_grads[k] = affine_steps[k].select(0, t);
      kernels.normed_gru_cell_backward(
          step_norms, ref(d_input.select(0, t)), ref(d_projections.select(0, t)), ref(carry),
          kernel_args::affine_grads(step_grads, grad_refs), ref(d_h),
          ref(saved[kActivations].select(0, t)), ref(saved[kNormalised].select(0, t)),
          ref(saved[kStatistics].select(0, t)), ref(projections.select(0, t)), ref(h_prev),
          optional_ref(step_mask, mask_ref));
    } else {
      kernels.gru_cell_backward(ref(d_input.select(0, t)), ref(d_projections.select(0, t)),
                                ref(carry), ref(d_h), ref(saved[kActivations].select(0, t)),
                                ref(projections.select(0, t)), ref(h_prev),
                                optional_ref(step_mask, mask_ref));
    }
    // carry += dgh W_hh (times the dropout mask where W_hh read a masked state)
    const Tensor d_projection = d_projections.select(0, t);
    if (!dropout.defined()) {
      kernels.matmul(ref(carry), ref(d_projection), ref(weight), true);
    } else {
      kernels.matmul(ref(scratch), ref(d_projection), ref(weight), false);
      kernels.binary(backend::BinaryOp::Mul, ref(scratch), ref(scratch), ref(dropout), 0);
      kernels.binary(backend::BinaryOp::Add, ref(carry), ref(carry), ref(scratch), 0);
    }
  }

  autograd::Grads grads(4 + 4);
  grads[0] = d_input;
  grads[1] = carry;  // dL/dh0
  if (plan.weight_wanted) {
    // dW_hh = sum over steps of dgh_t^T (what W_hh read at step t): one product over T B rows.
    const Tensor rows = d_projections.reshape({steps * batch, 3 * hidden});
    Tensor d_weight = make({3 * hidden, hidden});
    if (dropout.defined()) {
      const Tensor read = saved[kProjected].reshape({steps * batch, hidden});
      kernels.matmul(ref(d_weight), ref(rows.t()), ref(read), false);
    } else {
      // The loop's first step read h0; every later one read the state one step before it in
      // the loop, so those (T - 1) B rows meet the states shifted by one: a product over B rows,
      // then one over the other (T - 1) B rows added to it.
      const std::int64_t first = step_at(plan, 0);
      const Tensor first_rows = d_projections.select(0, first);
      kernels.matmul(ref(d_weight), ref(first_rows.t()), ref(saved[kH0]), false);
      if (steps > 1) {
        const std::int64_t later = plan.reverse ? 0 : 1, read_from = plan.reverse ? 1 : 0;
        const Tensor later_rows =
            d_projections.narrow(0, later, steps - 1).reshape({(steps - 1) * batch, 3 * hidden});
        const Tensor read =
            states.narrow(0, read_from, steps - 1).reshape({(steps - 1) * batch, hidden});
        kernels.matmul(ref(d_weight), ref(later_rows.t()), ref(read), true);
      }
    }
    grads[2] = d_weight;
  }
  if (plan.bias_wanted) grads[3] = d_projections.reshape({steps * batch, 3 * hidden}).sum({0});
  for (int i = 0; i < 4; ++i)
    if (plan.affine_wanted[i]) grads[4 + i] = affine_steps[i].sum({0});
  return grads;
}

}  // namespace

Tensor gru_sequence(const Tensor& input_side, const Tensor& h0_in, const Tensor& weight_in,
                    const Tensor& bias_in, const std::optional<GruStateNorms>& given_norms,
                    const Tensor& mask, const Tensor& state_dropout, bool reverse) {
  // Mixed precision: float32 parameters rounded for bfloat16 data (nn/mixed_precision.h).
  const Tensor weight = in_input_dtype(weight_in, input_side);
  const Tensor bias = in_input_dtype(bias_in, input_side);
  std::optional<GruStateNorms> norms;
  if (given_norms)
    norms = GruStateNorms{kernel_args::for_input(given_norms->gates, input_side),
                          kernel_args::for_input(given_norms->candidate, input_side)};
  const Sizes sizes = check_sequence(input_side, h0_in, weight, bias, mask, state_dropout);
  const auto [steps, batch, hidden] = sizes;
  const DType dtype = input_side.dtype();
  const Device device = input_side.device();
  const auto make = [&](Shape shape) { return detail::make_tensor(shape, dtype, device); };

  Plan plan;
  plan.sizes = sizes;
  plan.reverse = reverse;
  plan.normed = norms.has_value();
  std::array<Tensor, 4> affine;  // the state norms' gains and biases, checked
  if (norms) {
    const kernel_args::GruNorms checked = kernel_args::gru_norms(*norms, hidden, input_side, op);
    plan.norms = checked.params;
    affine = checked.affine;
  }
  const Tensor x = input_side.contiguous().detach();
  const Tensor h0 = h0_in.contiguous().detach();
  const Tensor w = weight.detach();
  const Tensor masks = kernel_args::mask(mask, dtype);
  const Tensor dropout =
      state_dropout.defined() ? state_dropout.detach().to(dtype).contiguous() : Tensor();
  backend::Backend& kernels = detail::backend_of(x);

  Tensor states = make({steps, batch, hidden});
  Tensor projections = make({steps, batch, 3 * hidden});  // gh, before the norms
  Tensor activations = make({steps, batch, 3 * hidden});
  Tensor normalised = norms ? make({steps, batch, 3 * hidden}) : Tensor();
  Tensor statistics =
      norms ? detail::make_tensor({steps, 4, batch}, compute_dtype(dtype), device) : Tensor();
  Tensor projected = dropout.defined() ? make({steps, batch, hidden}) : Tensor();
  // Each step's product adds onto b_hh, as linear's does (addmm).
  if (bias.defined())
    kernels.copy(ref(projections),
                 ref(bias.detach().reshape({1, 1, 3 * hidden}).expand({steps, batch, 3 * hidden})));
  const Tensor w_t = w.t();
  std::array<backend::TensorRef, 4> affine_refs;
  const backend::GruStateNorms step_norms =
      kernel_args::with_affine(plan.norms, affine, affine_refs);

  for (std::int64_t i = 0; i < steps; ++i) {
    const std::int64_t t = step_at(plan, i);
    const Tensor h_prev = state_read(plan, i, h0, states);
    Tensor read = h_prev;
    if (dropout.defined()) {
      read = projected.select(0, t);
      kernels.binary(backend::BinaryOp::Mul, ref(read), ref(h_prev), ref(dropout), 0);
    }
    const Tensor projection = projections.select(0, t);
    kernels.matmul(ref(projection), ref(read), ref(w_t), bias.defined());
    const Tensor step_mask = masks.defined() ? masks.select(0, t) : Tensor();
    backend::TensorRef mask_ref;
    if (norms)
      kernels.normed_gru_cell_forward(
          step_norms, ref(states.select(0, t)), ref(activations.select(0, t)),
          ref(normalised.select(0, t)), ref(statistics.select(0, t)), ref(x.select(0, t)),
          ref(projection), ref(h_prev), optional_ref(step_mask, mask_ref));
    else
      kernels.gru_cell_forward(ref(states.select(0, t)), ref(activations.select(0, t)),
                               ref(x.select(0, t)), ref(projection), ref(h_prev),
                               optional_ref(step_mask, mask_ref));
  }

  std::vector<Tensor> inputs = {input_side, h0_in, weight, bias};
  if (norms)
    inputs.insert(inputs.end(), {norms->gates.gain, norms->gates.bias, norms->candidate.gain,
                                 norms->candidate.bias});
  else
    inputs.resize(8);
  if (!autograd::needs_grad(inputs)) return states;
  for (int i = 0; i < 4; ++i)
    plan.affine_wanted[i] = inputs[4 + i].defined() && inputs[4 + i].requires_grad();
  plan.weight_wanted = weight.requires_grad();
  plan.bias_wanted = bias.defined() && bias.requires_grad();
  autograd::SavedTensors saved(kSavedCount);
  saved[kStates] = states;
  saved[kProjections] = projections;
  saved[kActivations] = activations;
  saved[kNormalised] = normalised;
  saved[kStatistics] = statistics;
  saved[kH0] = h0;
  saved[kMask] = masks;
  saved[kDropout] = dropout;
  saved[kProjected] = projected;
  saved[kWeight] = w;
  for (int i = 0; i < 4; ++i) saved[kGain0 + i] = affine[i];
  autograd::record("GruSequenceBackward", states, inputs, std::move(saved),
                   [plan](const Tensor& d_states, const autograd::SavedTensors& s) {
                     return backward(plan, d_states, s);
                   });
  return states;
}

}  // namespace normgrad::nn::functional
