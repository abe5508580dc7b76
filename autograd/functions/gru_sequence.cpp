#include "autograd/functions/gru_sequence.h"

#include <array>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "autograd/grad_mode.h"
#include "autograd/mixed_precision.h"
#include "autograd/ops.h"
#include "autograd/primitives.h"
#include "autograd/record.h"
#include "base/error.h"
#include "core/tensor_internal.h"
#include "autograd/functions/recurrent_kernel_args.h"
#include "autograd/functions/recurrent_steps.h"

namespace normgrad {

namespace {

using detail::ref;
using kernel_args::optional_ref;

constexpr const char* op = "gru_sequence";

using sequence_steps::first_rows;
using sequence_steps::later_rows;
using sequence_steps::step_statistics;

// What backward reads, beside the saved tensors.
struct Plan {
  sequence_steps::Plan steps;
  bool normed = false;
  backend::GruStateNorms norms{};       // NormParams only; the gains are saved
  std::array<bool, 4> affine_wanted{};  // gradients of [gates gain, bias, candidate gain, bias]
  bool weight_wanted = false, bias_wanted = false;
  // The states that W_hh read are kept as their own packed matrix (times the dropout mask)
  // with dropout or when packed; otherwise they are the states shifted by one step.
  bool reads_kept = false;
};

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
  kReads,
  kWeight,
  kGain0,
  kBias0,
  kGain1,
  kBias1,
  kSavedCount
};

autograd::Grads backward(const Plan& plan, const Tensor& d_states,
                         const autograd::SavedTensors& saved) {
  const sequence_steps::Plan& order = plan.steps;
  const auto [steps, batch, hidden] = order.sizes;
  const Tensor upstream = d_states.contiguous();
  backend::Backend& kernels = detail::backend_of(upstream);
  const sequence_steps::Buffers buffers{upstream.dtype(), upstream.device(), order.packed};
  const Tensor& states = saved[kStates];
  const Tensor& projections = saved[kProjections];
  const Tensor& mask = saved[kMask];
  const Tensor& dropout = saved[kDropout];
  const Tensor& weight = saved[kWeight];

  Tensor d_input = buffers.for_rows({steps, batch, 3 * hidden});
  Tensor d_projections = buffers.make({order.packed_rows, 3 * hidden});  // packed
  Tensor carry = buffers.zeros({batch, hidden});  // dL/dh from the steps after
  Tensor d_h = buffers.make({batch, hidden});
  Tensor scratch = dropout.defined() ? buffers.make({batch, hidden}) : Tensor();
  // The gains' and biases' gradients of each step, summed over steps at the end.
  std::array<Tensor, 4> affine_steps;
  const std::int64_t widths[4] = {2 * hidden, 2 * hidden, hidden, hidden};
  for (int i = 0; i < 4; ++i)
    if (plan.affine_wanted[i]) affine_steps[i] = buffers.for_rows({steps, widths[i]});

  std::array<backend::TensorRef, 4> parameter_refs, grad_refs;
  const backend::GruStateNorms step_norms = kernel_args::with_affine(
      plan.norms, std::span<const Tensor, 4>(saved.begin() + kGain0, 4), parameter_refs);

  for (std::int64_t i = steps; i-- > 0;) {
    const std::int64_t t = order.step_at(i);
    const std::int64_t count = order.rows_of(t);
    kernels.binary(backend::BinaryOp::Add, ref(d_h), ref(upstream.select(0, t)), ref(carry), 0);
    // The rows that skipped the step pass their gradient on to the state before it.
    if (count < batch) kernels.copy(ref(later_rows(carry, count)), ref(later_rows(d_h, count)));
    if (count == 0) continue;
    const auto rows = [&](const Tensor& x) { return first_rows(x, count); };
    const Tensor h_prev = rows(order.state_before(i, saved[kH0], states));
    const Tensor step_mask = mask.defined() ? mask.select(0, t) : Tensor();
    const Tensor d_projection = order.packed_rows_of(d_projections, t);
    const Tensor d_prev = rows(carry);
    backend::TensorRef mask_ref;
    // dgx, dgh and the cell's part of dh_prev (into carry, which d_h has consumed)
    if (plan.normed) {
      std::array<Tensor, 4> step_grads;  // this step's row of each wanted gradient
      for (int k = 0; k < 4; ++k)
        if (plan.affine_wanted[k]) step_grads[k] = affine_steps[k].select(0, t);
      kernels.normed_gru_cell_backward(
          step_norms, ref(rows(d_input.select(0, t))), ref(d_projection), ref(d_prev),
          kernel_args::affine_grads(step_grads, grad_refs), ref(rows(d_h)),
          ref(rows(saved[kActivations].select(0, t))), ref(rows(saved[kNormalised].select(0, t))),
          ref(step_statistics(saved[kStatistics], t, count)), ref(rows(projections.select(0, t))),
          ref(h_prev), optional_ref(step_mask, mask_ref));
    } else {
      kernels.gru_cell_backward(ref(rows(d_input.select(0, t))), ref(d_projection), ref(d_prev),
                                ref(rows(d_h)), ref(rows(saved[kActivations].select(0, t))),
                                ref(rows(projections.select(0, t))), ref(h_prev),
                                optional_ref(step_mask, mask_ref));
    }
    sequence_steps::add_state_gradient(kernels, d_prev, d_projection, weight,
                                       dropout.defined() ? rows(dropout) : Tensor(),
                                       dropout.defined() ? rows(scratch) : Tensor());
  }

  autograd::Grads grads(4 + 4);
  grads[0] = d_input;
  grads[1] = carry;  // dL/dh0
  if (plan.weight_wanted) {
    // dW_hh = sum over steps of dgh_t^T (what W_hh read at step t): one product over all the
    // rows the steps computed.
    Tensor d_weight = buffers.make({3 * hidden, hidden});
    if (order.packed_rows == 0) {
      d_weight = buffers.zeros({3 * hidden, hidden});
    } else if (plan.reads_kept) {
      kernels.matmul(ref(d_weight), ref(d_projections.t()), ref(saved[kReads]), false);
    } else {
      // Every step computed all B rows. The loop's first step read h0; every later one read
      // the state one step before it in the loop, so those (T - 1) B rows meet the states
      // shifted by one: a product over B rows, then one over the other (T - 1) B rows added.
      const std::int64_t first = order.step_at(0);
      const Tensor first_products = d_projections.narrow(0, first * batch, batch);
      kernels.matmul(ref(d_weight), ref(first_products.t()), ref(saved[kH0]), false);
      if (steps > 1) {
        const std::int64_t later = order.reverse ? 0 : 1, read_from = order.reverse ? 1 : 0;
        const Tensor later_products = d_projections.narrow(0, later * batch, (steps - 1) * batch);
        const Tensor read =
            states.narrow(0, read_from, steps - 1).reshape({(steps - 1) * batch, hidden});
        kernels.matmul(ref(d_weight), ref(later_products.t()), ref(read), true);
      }
    }
    grads[2] = d_weight;
  }
  if (plan.bias_wanted) grads[3] = d_projections.sum({0});
  for (int i = 0; i < 4; ++i)
    if (plan.affine_wanted[i]) grads[4 + i] = affine_steps[i].sum({0});
  return grads;
}

}  // namespace

Tensor gru_sequence(const Tensor& input_side, const Tensor& h0_in, const Tensor& weight_in,
                    const Tensor& bias_in, const std::optional<GruStateNorms>& given_norms,
                    const SequenceOptions& options) {
  // Mixed precision: float32 parameters rounded for bfloat16 data (autograd/mixed_precision.h).
  const Tensor weight = in_input_dtype(weight_in, input_side);
  const Tensor bias = in_input_dtype(bias_in, input_side);
  std::optional<GruStateNorms> norms;
  if (given_norms)
    norms = GruStateNorms{kernel_args::for_input(given_norms->gates, input_side),
                          kernel_args::for_input(given_norms->candidate, input_side)};
  const sequence_steps::Sizes sizes =
      sequence_steps::check(op, input_side, 3, h0_in, weight, bias, options);
  const auto [steps, batch, hidden] = sizes;
  const DType dtype = input_side.dtype();
  const sequence_steps::Buffers buffers{dtype, input_side.device()};

  Plan plan;
  plan.steps = sequence_steps::Plan(sizes, options);
  const sequence_steps::Plan& order = plan.steps;
  plan.normed = norms.has_value();
  plan.reads_kept = order.packed || options.state_dropout.defined();
  std::array<Tensor, 4> affine;  // the state norms' gains and biases, checked
  if (norms) {
    const kernel_args::GruNorms checked = kernel_args::gru_norms(*norms, hidden, input_side, op);
    plan.norms = checked.params;
    affine = checked.affine;
  }
  const Tensor x = input_side.contiguous().detach();
  const Tensor h0 = h0_in.contiguous().detach();
  const Tensor w = weight.detach();
  const Tensor masks = kernel_args::mask(options.mask, dtype);
  const Tensor dropout = sequence_steps::dropout_mask(options, dtype);
  backend::Backend& kernels = detail::backend_of(x);

  Tensor states = buffers.make({steps, batch, hidden});
  Tensor projections = buffers.make({steps, batch, 3 * hidden});  // gh, before the norms
  Tensor activations = buffers.make({steps, batch, 3 * hidden});
  Tensor normalised = norms ? buffers.make({steps, batch, 3 * hidden}) : Tensor();
  Tensor statistics =
      norms ? detail::make_tensor({steps, 4 * batch}, compute_dtype(dtype), input_side.device())
            : Tensor();
  Tensor reads = plan.reads_kept ? buffers.make({order.packed_rows, hidden}) : Tensor();
  sequence_steps::start_from_bias(kernels, projections, bias);
  const Tensor w_t = w.t();
  std::array<backend::TensorRef, 4> affine_refs;
  const backend::GruStateNorms step_norms =
      kernel_args::with_affine(plan.norms, affine, affine_refs);

  for (std::int64_t i = 0; i < steps; ++i) {
    const std::int64_t t = order.step_at(i);
    const std::int64_t count = order.rows_of(t);
    const Tensor state_before = order.state_before(i, h0, states);
    const Tensor state = states.select(0, t);
    // The rows that skip the step keep their state.
    if (count < batch)
      kernels.copy(ref(later_rows(state, count)), ref(later_rows(state_before, count)));
    if (count == 0) continue;
    const auto rows = [&](const Tensor& v) { return first_rows(v, count); };
    const Tensor h_prev = rows(state_before);
    const Tensor read = sequence_steps::state_read(
        kernels, h_prev, reads.defined() ? order.packed_rows_of(reads, t) : Tensor(),
        dropout.defined() ? rows(dropout) : Tensor());
    const Tensor projection = rows(projections.select(0, t));
    kernels.matmul(ref(projection), ref(read), ref(w_t), bias.defined());
    const Tensor step_mask = masks.defined() ? masks.select(0, t) : Tensor();
    backend::TensorRef mask_ref;
    if (norms)
      kernels.normed_gru_cell_forward(
          step_norms, ref(rows(state)), ref(rows(activations.select(0, t))),
          ref(rows(normalised.select(0, t))), ref(step_statistics(statistics, t, count)),
          ref(rows(x.select(0, t))), ref(projection), ref(h_prev),
          optional_ref(step_mask, mask_ref));
    else
      kernels.gru_cell_forward(ref(rows(state)), ref(rows(activations.select(0, t))),
                               ref(rows(x.select(0, t))), ref(projection), ref(h_prev),
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
  saved[kReads] = reads;
  saved[kWeight] = w;
  for (int i = 0; i < 4; ++i) saved[kGain0 + i] = affine[i];
  autograd::record(
      "GruSequenceBackward", states, inputs, std::move(saved),
      [plan = std::move(plan)](const Tensor& d_states, const autograd::SavedTensors& s) {
        return backward(plan, d_states, s);
      });
  return states;
}

}  // namespace normgrad
