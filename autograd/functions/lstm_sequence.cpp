#include "autograd/functions/lstm_sequence.h"

#include <array>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

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
using sequence_steps::first_rows;
using sequence_steps::later_rows;
using sequence_steps::step_statistics;

// A unity build joins this file's anonymous namespace with gru_sequence.cpp's, whose helpers
// have the same names: these live in their own.
namespace lstm_loop {

constexpr const char* op = "lstm_sequence";

// What backward reads, beside the saved tensors.
struct Plan {
  sequence_steps::Plan steps;
  backend::LstmStepNorms norms{};       // which norms apply, and their NormParams
  std::array<bool, 4> affine_wanted{};  // gradients of [state gain, bias, cell gain, bias]
  bool weight_wanted = false, bias_wanted = false;
};

// Saved tensors, by position.
enum Saved : std::size_t {
  kStates,       // [T, B, 2H]: [h | c] after each step
  kPrevious,     // [2, packed rows, H]: the h and the c that each step's rows read
  kProjections,  // [T, B, 4H]: W_hh h + b_hh, before the state norm
  kActivations,  // [T, B, 4H]: [i | f | g | o]
  kCells,        // [T, B, H]: the cell norm's output
  kStatistics,   // [T, 4 B]
  kMask,
  kDropout,
  kReads,  // [packed rows, H]: h times the dropout mask, what W_hh read (with dropout only)
  kWeight,
  kAffine,  // four: the norms' gains and biases, in LstmNorms' order
  kSavedCount = kAffine + 4
};

autograd::Grads backward(const Plan& plan, const Tensor& d_states,
                         const autograd::SavedTensors& saved) {
  const sequence_steps::Plan& order = plan.steps;
  const auto [steps, batch, hidden] = order.sizes;
  const Tensor upstream = d_states.contiguous();
  backend::Backend& kernels = detail::backend_of(upstream);
  const sequence_steps::Buffers buffers{upstream.dtype(), upstream.device(), order.packed};
  const Tensor& states = saved[kStates];
  const Tensor& previous = saved[kPrevious];
  const Tensor& projections = saved[kProjections];
  const Tensor& mask = saved[kMask];
  const Tensor& dropout = saved[kDropout];
  const Tensor& weight = saved[kWeight];

  Tensor d_input = buffers.for_rows({steps, batch, 4 * hidden});
  Tensor d_projections = buffers.make({order.packed_rows, 4 * hidden});  // packed
  // [dL/dh; dL/dc] reaching the state before the step from the steps after it.
  Tensor carry = buffers.zeros({2, batch, hidden});
  Tensor d_state = buffers.make({batch, 2 * hidden});  // [dh | dc] of the step's output, by row
  Tensor scratch = dropout.defined() ? buffers.make({batch, hidden}) : Tensor();
  // The gains' and biases' gradients of each step, summed over steps at the end.
  std::array<Tensor, 4> affine_steps;
  const std::int64_t widths[4] = {4 * hidden, 4 * hidden, hidden, hidden};
  for (int i = 0; i < 4; ++i)
    if (plan.affine_wanted[i]) affine_steps[i] = buffers.for_rows({steps, widths[i]});

  std::array<backend::TensorRef, 4> parameter_refs, grad_refs;
  const backend::LstmStepNorms step_norms = kernel_args::with_affine(
      plan.norms, std::span<const Tensor, 4>(saved.begin() + kAffine, 4), parameter_refs);

  for (std::int64_t i = steps; i-- > 0;) {
    const std::int64_t t = order.step_at(i);
    const std::int64_t count = order.rows_of(t);
    kernels.binary(backend::BinaryOp::Add, ref(d_state.reshape({batch, 2, hidden})),
                   ref(upstream.select(0, t).reshape({batch, 2, hidden})),
                   ref(carry.transpose(0, 1)), 0);
    // The rows that skipped the step pass their gradients on to the state before it.
    if (count < batch)
      kernels.copy(
          ref(carry.narrow(1, count, batch - count)),
          ref(later_rows(d_state, count).reshape({batch - count, 2, hidden}).transpose(0, 1)));
    if (count == 0) continue;
    const auto rows = [&](const Tensor& x) { return first_rows(x, count); };
    const Tensor d_prev_h = rows(carry.select(0, 0)), d_prev_c = rows(carry.select(0, 1));
    const Tensor d_projection = order.packed_rows_of(d_projections, t);
    std::array<Tensor, 4> step_grads;  // this step's row of each wanted gradient
    for (int k = 0; k < 4; ++k)
      if (plan.affine_wanted[k]) step_grads[k] = affine_steps[k].select(0, t);
    const Tensor step_mask = mask.defined() ? mask.select(0, t) : Tensor();
    backend::TensorRef mask_ref;
    // dgx, dgh, dc_prev, and dh_prev where rows skipped by the mask pass dh on (0 elsewhere)
    kernels.lstm_step_backward(
        step_norms, ref(rows(d_input.select(0, t))), ref(d_projection), ref(d_prev_h),
        ref(d_prev_c), kernel_args::lstm_affine_grads(step_grads, grad_refs), ref(rows(d_state)),
        ref(rows(states.select(0, t))), ref(rows(saved[kActivations].select(0, t))),
        ref(rows(saved[kCells].select(0, t))), ref(step_statistics(saved[kStatistics], t, count)),
        ref(rows(projections.select(0, t))), ref(order.packed_rows_of(previous.select(0, 1), t)),
        optional_ref(step_mask, mask_ref));
    sequence_steps::add_state_gradient(kernels, d_prev_h, d_projection, weight,
                                       dropout.defined() ? rows(dropout) : Tensor(),
                                       dropout.defined() ? rows(scratch) : Tensor());
  }

  autograd::Grads grads(5 + 4);
  grads[0] = d_input;
  grads[1] = carry.select(0, 0);  // dL/dh0
  grads[2] = carry.select(0, 1);  // dL/dc0
  if (plan.weight_wanted) {
    // dW_hh = sum over steps of dgh_t^T (what W_hh read at step t): one product over all the
    // rows the steps computed.
    const Tensor read = dropout.defined() ? saved[kReads] : previous.select(0, 0);
    Tensor d_weight = buffers.zeros({4 * hidden, hidden});
    if (order.packed_rows > 0)
      kernels.matmul(ref(d_weight), ref(d_projections.t()), ref(read), false);
    grads[3] = d_weight;
  }
  if (plan.bias_wanted) grads[4] = d_projections.sum({0});
  for (int i = 0; i < 4; ++i)
    if (plan.affine_wanted[i]) grads[5 + i] = affine_steps[i].sum({0});
  return grads;
}

Tensor forward(const Tensor& input_side, const Tensor& h0_in, const Tensor& c0_in,
               const Tensor& weight_in, const Tensor& bias_in, const LstmStepNorms& given_norms,
               const SequenceOptions& options) {
  // Mixed precision: float32 parameters rounded for bfloat16 data (autograd/mixed_precision.h).
  const Tensor weight = in_input_dtype(weight_in, input_side);
  const Tensor bias = in_input_dtype(bias_in, input_side);
  const LstmStepNorms norms = kernel_args::for_input(given_norms, input_side);
  const sequence_steps::Sizes sizes =
      sequence_steps::check(op, input_side, 4, h0_in, weight, bias, options);
  const auto [steps, batch, hidden] = sizes;
  NG_CHECK(c0_in.defined() && c0_in.shape() == h0_in.shape(), op, "c0 must be ", h0_in.shape(),
           " as h0 is, got ", c0_in.defined() ? c0_in.shape() : Shape{});
  autograd::primitive::check_same_dtype(input_side, c0_in, op);
  autograd::primitive::check_same_device(input_side, c0_in, op);
  const DType dtype = input_side.dtype();
  const sequence_steps::Buffers buffers{dtype, input_side.device()};

  Plan plan;
  plan.steps = sequence_steps::Plan(sizes, options);
  const sequence_steps::Plan& order = plan.steps;
  const kernel_args::LstmNorms checked = kernel_args::lstm_norms(norms, hidden, input_side, op);
  plan.norms = checked.params;
  const Tensor x = input_side.contiguous().detach();
  const Tensor start = cat({h0_in.detach(), c0_in.detach()}, 1);  // [h0 | c0]
  const Tensor w = weight.detach();
  const Tensor masks = kernel_args::mask(options.mask, dtype);
  const Tensor dropout = sequence_steps::dropout_mask(options, dtype);
  backend::Backend& kernels = detail::backend_of(x);

  Tensor states = buffers.make({steps, batch, 2 * hidden});
  Tensor previous = buffers.make({2, order.packed_rows, hidden});
  Tensor projections = buffers.make({steps, batch, 4 * hidden});
  Tensor activations = buffers.make({steps, batch, 4 * hidden});
  Tensor cells = buffers.make({steps, batch, hidden});
  Tensor statistics =
      detail::make_tensor({steps, 4 * batch}, compute_dtype(dtype), input_side.device());
  Tensor reads = dropout.defined() ? buffers.make({order.packed_rows, hidden}) : Tensor();
  sequence_steps::start_from_bias(kernels, projections, bias);
  const Tensor w_t = w.t();
  std::array<backend::TensorRef, 4> affine_refs;
  const backend::LstmStepNorms step_norms =
      kernel_args::with_affine(plan.norms, checked.affine, affine_refs);

  for (std::int64_t i = 0; i < steps; ++i) {
    const std::int64_t t = order.step_at(i);
    const std::int64_t count = order.rows_of(t);
    const Tensor state_before = order.state_before(i, start, states);  // [B, 2H]
    const Tensor state = states.select(0, t);
    // The rows that skip the step keep their state.
    if (count < batch)
      kernels.copy(ref(later_rows(state, count)), ref(later_rows(state_before, count)));
    if (count == 0) continue;
    const auto rows = [&](const Tensor& v) { return first_rows(v, count); };
    // The running rows' h and c, each contiguous as the kernel reads them.
    kernels.copy(ref(order.packed_rows_of(previous, t, 1)),
                 ref(rows(state_before).reshape({count, 2, hidden}).transpose(0, 1)));
    const Tensor h_prev = order.packed_rows_of(previous.select(0, 0), t);
    const Tensor c_prev = order.packed_rows_of(previous.select(0, 1), t);
    const Tensor read = sequence_steps::state_read(
        kernels, h_prev, dropout.defined() ? order.packed_rows_of(reads, t) : Tensor(),
        dropout.defined() ? rows(dropout) : Tensor());
    const Tensor projection = rows(projections.select(0, t));
    kernels.matmul(ref(projection), ref(read), ref(w_t), bias.defined());
    const Tensor step_mask = masks.defined() ? masks.select(0, t) : Tensor();
    backend::TensorRef mask_ref;
    kernels.lstm_step_forward(step_norms, ref(rows(state)), ref(rows(activations.select(0, t))),
                              ref(rows(cells.select(0, t))),
                              ref(step_statistics(statistics, t, count)), ref(rows(x.select(0, t))),
                              ref(projection), ref(h_prev), ref(c_prev),
                              optional_ref(step_mask, mask_ref));
  }

  const RowNorm none;
  const RowNorm& state_norm = norms.state ? *norms.state : none;
  const RowNorm& cell_norm = norms.cell ? *norms.cell : none;
  const std::vector<Tensor> inputs = {input_side,      h0_in,          c0_in,
                                      weight,          bias,           state_norm.gain,
                                      state_norm.bias, cell_norm.gain, cell_norm.bias};
  if (!autograd::needs_grad(inputs)) return states;
  for (int i = 0; i < 4; ++i)
    plan.affine_wanted[i] = inputs[5 + i].defined() && inputs[5 + i].requires_grad();
  plan.weight_wanted = weight.requires_grad();
  plan.bias_wanted = bias.defined() && bias.requires_grad();
  autograd::SavedTensors saved(kSavedCount);
  saved[kStates] = states;
  saved[kPrevious] = previous;
  saved[kProjections] = projections;
  saved[kActivations] = activations;
  saved[kCells] = cells;
  saved[kStatistics] = statistics;
  saved[kMask] = masks;
  saved[kDropout] = dropout;
  saved[kReads] = reads;
  saved[kWeight] = w;
  for (int i = 0; i < 4; ++i) saved[kAffine + i] = checked.affine[i];
  autograd::record(
      "LstmSequenceBackward", states, inputs, std::move(saved),
      [plan = std::move(plan)](const Tensor& d_states, const autograd::SavedTensors& s) {
        return backward(plan, d_states, s);
      });
  return states;
}

}  // namespace lstm_loop
}  // namespace

Tensor lstm_sequence(const Tensor& input_side, const Tensor& h0, const Tensor& c0,
                     const Tensor& weight_hh, const Tensor& bias_hh, const LstmStepNorms& norms,
                     const SequenceOptions& options) {
  return lstm_loop::forward(input_side, h0, c0, weight_hh, bias_hh, norms, options);
}

}  // namespace normgrad
