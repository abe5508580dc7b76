#include "autograd/functions/recurrent_sequence.h"

#include <array>
#include <cstdint>
#include <iterator>
#include <span>
#include <utility>
#include <vector>

#include "autograd/functions/recurrent_kernel_args.h"
#include "autograd/mixed_precision.h"
#include "autograd/ops.h"
#include "autograd/primitives.h"
#include "autograd/record.h"
#include "backends/backend.h"
#include "base/error.h"
#include "core/tensor_internal.h"

namespace normgrad {

namespace {
// A unity build joins the anonymous namespaces of the family's files, whose helpers have names
// like these: this file's live in their own.
namespace sequence_loop {

using detail::ref;
using kernel_args::optional_ref;

// ---- The loop's shape and order --------------------------------------------------------------

struct Sizes {
  std::int64_t steps, batch, hidden;
};

// Checks input_side [T > 0, B, gates H], h0 [B, H], weight_hh [gates H, H], bias_hh [gates H]
// (or undefined) and `options` against them; an Error names `op` and the operand.
Sizes check(const char* op, const Tensor& x, std::int64_t gates, const Tensor& h0,
            const Tensor& weight, const Tensor& bias, const SequenceOptions& options) {
  NG_CHECK(x.defined() && h0.defined() && weight.defined(), op,
           "input_side, h0 and weight_hh must be defined");
  autograd::primitive::check_floating(x, op);
  NG_CHECK(h0.dim() == 2, op, "h0 must be [batch, hidden], got ", h0.shape());
  const std::int64_t batch = h0.size(0), hidden = h0.size(1);
  NG_CHECK(x.dim() == 3 && x.size(0) > 0 && x.size(1) == batch && x.size(2) == gates * hidden, op,
           "input_side must be [steps > 0, ", batch, ", ", gates * hidden, "] for h0 ", h0.shape(),
           ", got ", x.shape());
  NG_CHECK(weight.shape() == Shape({gates * hidden, hidden}), op, "weight_hh must be [",
           gates * hidden, ", ", hidden, "], got ", weight.shape());
  NG_CHECK(!bias.defined() || bias.shape() == Shape{gates * hidden}, op, "bias_hh must be [",
           gates * hidden, "], got ", bias.shape());
  for (const Tensor* t : {&h0, &weight, &bias}) {
    if (!t->defined()) continue;
    autograd::primitive::check_same_dtype(x, *t, op);
    autograd::primitive::check_same_device(x, *t, op);
  }
  const std::int64_t steps = x.size(0);
  const Tensor& mask = options.mask;
  const Tensor& state_dropout = options.state_dropout;
  NG_CHECK(!mask.defined() || mask.shape() == Shape({steps, batch}), op, "mask must be [", steps,
           ", ", batch, "], got ", mask.shape());
  NG_CHECK(!state_dropout.defined() || state_dropout.shape() == h0.shape(), op,
           "state_dropout must be ", h0.shape(), ", got ", state_dropout.shape());
  for (const Tensor* t : {&mask, &state_dropout})
    if (t->defined()) autograd::primitive::check_same_device(x, *t, op);
  const std::vector<std::int64_t>& sizes = options.batch_sizes;
  if (!sizes.empty()) {
    NG_CHECK(!mask.defined(), op, "takes a mask or batch_sizes, not both");
    NG_CHECK(std::ssize(sizes) == steps, op, "batch_sizes must hold one count per step (", steps,
             "), got ", sizes.size());
    for (std::size_t t = 0; t < sizes.size(); ++t)
      NG_CHECK(sizes[t] >= 0 && sizes[t] <= batch, op, "batch_sizes[", t, "] must be in [0, ",
               batch, "], got ", sizes[t]);
  }
  return {steps, batch, hidden};
}

// The loop's order and the rows of each step.
struct Order {
  Sizes sizes{};
  bool reverse = false;
  bool packed = false;  // batch_sizes given: step t computes its first rows[t] rows only
  // By time step: the rows it computes, and where they start in the packed matrices of state-
  // side products and their gradients ([packed_rows, ...]: each step's rows after the last's).
  std::vector<std::int64_t> rows, offset;
  std::int64_t packed_rows = 0;

  Order() = default;
  Order(const Sizes& sizes_in, const SequenceOptions& options)
      : sizes(sizes_in), reverse(options.reverse), packed(!options.batch_sizes.empty()) {
    rows = packed ? options.batch_sizes
                  : std::vector<std::int64_t>(static_cast<std::size_t>(sizes.steps), sizes.batch);
    for (const std::int64_t count : rows) {
      offset.push_back(packed_rows);
      packed_rows += count;
    }
  }

  // The time step at position i of the loop.
  std::int64_t step_at(std::int64_t i) const { return reverse ? sizes.steps - 1 - i : i; }
  std::int64_t rows_of(std::int64_t t) const { return rows[static_cast<std::size_t>(t)]; }
  // The state that the step at loop position i reads: `initial` first, then the previous
  // position's in `states` [T, B, ...].
  Tensor state_before(std::int64_t i, const Tensor& initial, const Tensor& states) const {
    return i == 0 ? initial : states.select(0, step_at(i - 1));
  }
  // Step t's rows of a packed matrix, whose dim `dim` has packed_rows rows.
  Tensor packed_rows_of(const Tensor& packed_matrix, std::int64_t t, std::int64_t dim = 0) const {
    return packed_matrix.narrow(dim, offset[static_cast<std::size_t>(t)], rows_of(t));
  }
};

// The first `count` rows of a [B, ...] tensor: contiguous where it is.
Tensor first_rows(const Tensor& x, std::int64_t count) {
  return x.size(0) == count ? x : x.narrow(0, 0, count);
}

// The rows after the first `count`.
Tensor later_rows(const Tensor& x, std::int64_t count) {
  return x.narrow(0, count, x.size(0) - count);
}

// Step t's statistics of its `count` rows: contiguous [4, count] at the start of its [4 B] row
// of statistics [T, 4 B].
Tensor step_statistics(const Tensor& statistics, std::int64_t t, std::int64_t count) {
  return statistics.select(0, t).narrow(0, 0, 4 * count).reshape({4, count});
}

// New tensors of one dtype and device, for an op's buffers.
struct Buffers {
  DType dtype;
  Device device;
  bool packed = false;

  Tensor make(const Shape& shape) const { return detail::make_tensor(shape, dtype, device); }
  Tensor zeros(const Shape& shape) const {
    return normgrad::zeros(shape, {.dtype = dtype, .device = device});
  }
  // A gradient buffer by step: packed, the rows a step skips get no gradient, so it starts at
  // zero; otherwise every entry is written.
  Tensor for_rows(const Shape& shape) const { return packed ? zeros(shape) : make(shape); }
};

// What W_hh reads at a step: h_prev [rows, H] itself, or, where `read` is defined (its rows of
// a kept matrix), h_prev copied there, times the dropout mask's rows where there is one.
Tensor state_read(backend::Backend& kernels, const Tensor& h_prev, const Tensor& read,
                  const Tensor& dropout) {
  if (!read.defined()) return h_prev;
  if (dropout.defined())
    kernels.binary(backend::BinaryOp::Mul, ref(read), ref(h_prev), ref(dropout), 0);
  else
    kernels.copy(ref(read), ref(h_prev));
  return read;
}

// d_prev += dgh W_hh at a step, times the dropout mask's rows where W_hh read a masked state
// (`scratch` then holds the product).
void add_state_gradient(backend::Backend& kernels, const Tensor& d_prev, const Tensor& d_projection,
                        const Tensor& weight, const Tensor& dropout, const Tensor& scratch) {
  if (!dropout.defined()) {
    kernels.matmul(ref(d_prev), ref(d_projection), ref(weight), true);
    return;
  }
  kernels.matmul(ref(scratch), ref(d_projection), ref(weight), false);
  kernels.binary(backend::BinaryOp::Mul, ref(scratch), ref(scratch), ref(dropout), 0);
  kernels.binary(backend::BinaryOp::Add, ref(d_prev), ref(d_prev), ref(scratch), 0);
}

// ---- What the loop keeps, and what it asks of a cell -------------------------------------------
//
// A cell (GruCell, LstmCell below) gives the loop:
//   op, node            its op's name for errors, and its backward node's
//   gates, parts        its gate width in H (3 or 4) and its state's parts ([h] or [h | c])
//   norm_widths         the widths in H of its norms' four gains and biases
//   norms               its norms' NormParams, as its kernels take them
//   keeps_reads         whether W_hh's reads are kept as their own matrix
//   keeps_statistics    whether its kernels write per-row norm statistics
//   allocate            its own saved tensors (from kOwn on)
//   h_prev              the running rows' h before a step, contiguous as its kernels read it
//   forward, backward   one step's fused kernel each way
//   weight_reads        what W_hh read, as one matrix, for its gradient (undefined: the states
//                       shifted by one step were what it read)

// The tensors that forward keeps for backward, by position.
enum Saved : std::size_t {
  kStates,       // [T, B, parts H]: the state after each step
  kStart,        // [B, parts H]: the state before the first
  kProjections,  // [T, B, gates H]: W_hh h + b_hh, before any state norm
  kActivations,  // [T, B, gates H]: the gates after their nonlinearities
  kStatistics,   // [T, 4 B]: the norms' per-row statistics, where the cell keeps them
  kMask,
  kDropout,
  kReads,   // [packed rows, H]: what W_hh read, where the cell keeps it
  kWeight,  // W_hh
  kAffine,  // four: the norms' gains and biases, in the cell's order
  kOwn = kAffine + 4,
  kSavedCount = kOwn + 2
};

// One step as the cells' kernels see it. Forward fills the first block, backward all of it.
struct Step {
  std::int64_t i = 0, t = 0, count = 0;      // loop position, time step, rows it computes
  const backend::TensorRef* mask = nullptr;  // the step's mask, or null
  Tensor x, projection, h_prev;              // the step's rows of input side, W_hh h + b_hh, h
  Tensor d_input, d_projection, d_state;     // dL/d(input side), dL/dgh, dL/d[h | c]
  std::array<Tensor, 2> d_prev;              // where dL/d(state before) goes, by part
  std::array<Tensor, 4> d_affine;            // this step's row of each wanted gain's gradient

  Tensor rows(const Tensor& v) const { return first_rows(v, count); }
};

struct Plan {
  Order order;
  std::array<bool, 4> affine_wanted{};  // gradients of the four gains and biases
  bool weight_wanted = false, bias_wanted = false;
};

// ---- The two cells ---------------------------------------------------------------------------

struct GruCell {
  static constexpr const char* op = "gru_sequence";
  static constexpr const char* node = "GruSequenceBackward";
  static constexpr std::int64_t gates = 3, parts = 1;
  // The widths in H of the four gains and biases: the gates norm's over [r | u], the
  // candidate norm's over c.
  static constexpr std::int64_t norm_widths[4] = {2, 2, 1, 1};
  bool normed = false;
  backend::GruStateNorms norms{};  // NormParams; the gains and biases are saved at kAffine
  static constexpr std::size_t kNormalised = kOwn;  // the normalised gh [T, B, 3H], with norms

  // The states that W_hh read are its own packed matrix (times the dropout mask) with dropout
  // or when packed; otherwise they are the states shifted by one step.
  bool keeps_reads(const Order& order, bool dropout) const { return order.packed || dropout; }
  bool keeps_statistics() const { return normed; }
  void allocate(autograd::SavedTensors& saved, const Buffers& buffers, const Order& order) const {
    const auto [steps, batch, hidden] = order.sizes;
    if (normed) saved[kNormalised] = buffers.make({steps, batch, 3 * hidden});
  }
  Tensor h_prev(backend::Backend&, const autograd::SavedTensors&, const Order&, const Step& step,
                const Tensor& state_before) const {
    return step.rows(state_before);
  }

  void forward(backend::Backend& kernels, const autograd::SavedTensors& s, const Order&,
               const Step& step, const backend::GruStateNorms& step_norms) const {
    const Tensor state = step.rows(s[kStates].select(0, step.t));
    const Tensor activations = step.rows(s[kActivations].select(0, step.t));
    if (normed)
      kernels.normed_gru_cell_forward(step_norms, ref(state), ref(activations),
                                      ref(step.rows(s[kNormalised].select(0, step.t))),
                                      ref(step_statistics(s[kStatistics], step.t, step.count)),
                                      ref(step.x), ref(step.projection), ref(step.h_prev),
                                      step.mask);
    else
      kernels.gru_cell_forward(ref(state), ref(activations), ref(step.x), ref(step.projection),
                               ref(step.h_prev), step.mask);
  }

  void backward(backend::Backend& kernels, const autograd::SavedTensors& s, const Order& order,
                const Step& step, const backend::GruStateNorms& step_norms) const {
    const Tensor h_prev = step.rows(order.state_before(step.i, s[kStart], s[kStates]));
    const Tensor activations = step.rows(s[kActivations].select(0, step.t));
    const Tensor projection = step.rows(s[kProjections].select(0, step.t));
    if (normed) {
      std::array<backend::TensorRef, 4> grad_refs;
      kernels.normed_gru_cell_backward(
          step_norms, ref(step.d_input), ref(step.d_projection), ref(step.d_prev[0]),
          kernel_args::affine_grads(step.d_affine, grad_refs), ref(step.rows(step.d_state)),
          ref(activations), ref(step.rows(s[kNormalised].select(0, step.t))),
          ref(step_statistics(s[kStatistics], step.t, step.count)), ref(projection), ref(h_prev),
          step.mask);
    } else {
      kernels.gru_cell_backward(ref(step.d_input), ref(step.d_projection), ref(step.d_prev[0]),
                                ref(step.rows(step.d_state)), ref(activations), ref(projection),
                                ref(h_prev), step.mask);
    }
  }

  Tensor weight_reads(const autograd::SavedTensors& s) const { return s[kReads]; }
};

struct LstmCell {
  static constexpr const char* op = "lstm_sequence";
  static constexpr const char* node = "LstmSequenceBackward";
  static constexpr std::int64_t gates = 4, parts = 2;
  // The widths in H of the four gains and biases: the state norm's, the cell norm's.
  static constexpr std::int64_t norm_widths[4] = {4, 4, 1, 1};
  backend::LstmStepNorms norms{};              // which norms apply, and their NormParams
  static constexpr std::size_t kCells = kOwn;  // the cell norm's output [T, B, H]
  // [2, packed rows, H]: the h and the c that each step's rows read, each contiguous as the
  // kernels read them
  static constexpr std::size_t kPrevious = kOwn + 1;

  bool keeps_reads(const Order&, bool dropout) const { return dropout; }
  bool keeps_statistics() const { return true; }
  void allocate(autograd::SavedTensors& saved, const Buffers& buffers, const Order& order) const {
    const auto [steps, batch, hidden] = order.sizes;
    saved[kCells] = buffers.make({steps, batch, hidden});
    saved[kPrevious] = buffers.make({2, order.packed_rows, hidden});
  }
  Tensor h_prev(backend::Backend& kernels, const autograd::SavedTensors& s, const Order& order,
                const Step& step, const Tensor& state_before) const {
    const Tensor& previous = s[kPrevious];
    const std::int64_t hidden = order.sizes.hidden;
    kernels.copy(ref(order.packed_rows_of(previous, step.t, 1)),
                 ref(step.rows(state_before).reshape({step.count, 2, hidden}).transpose(0, 1)));
    return order.packed_rows_of(previous.select(0, 0), step.t);
  }

  void forward(backend::Backend& kernels, const autograd::SavedTensors& s, const Order& order,
               const Step& step, const backend::LstmStepNorms& step_norms) const {
    const Tensor c_prev = order.packed_rows_of(s[kPrevious].select(0, 1), step.t);
    kernels.lstm_step_forward(step_norms, ref(step.rows(s[kStates].select(0, step.t))),
                              ref(step.rows(s[kActivations].select(0, step.t))),
                              ref(step.rows(s[kCells].select(0, step.t))),
                              ref(step_statistics(s[kStatistics], step.t, step.count)), ref(step.x),
                              ref(step.projection), ref(step.h_prev), ref(c_prev), step.mask);
  }

  void backward(backend::Backend& kernels, const autograd::SavedTensors& s, const Order& order,
                const Step& step, const backend::LstmStepNorms& step_norms) const {
    std::array<backend::TensorRef, 4> grad_refs;
    // dgx, dgh, dc_prev, and dh_prev where rows skipped by the mask pass dh on (0 elsewhere)
    kernels.lstm_step_backward(
        step_norms, ref(step.d_input), ref(step.d_projection), ref(step.d_prev[0]),
        ref(step.d_prev[1]), kernel_args::lstm_affine_grads(step.d_affine, grad_refs),
        ref(step.rows(step.d_state)), ref(step.rows(s[kStates].select(0, step.t))),
        ref(step.rows(s[kActivations].select(0, step.t))),
        ref(step.rows(s[kCells].select(0, step.t))),
        ref(step_statistics(s[kStatistics], step.t, step.count)),
        ref(step.rows(s[kProjections].select(0, step.t))),
        ref(order.packed_rows_of(s[kPrevious].select(0, 1), step.t)), step.mask);
  }

  Tensor weight_reads(const autograd::SavedTensors& s) const {
    return s[kReads].defined() ? s[kReads] : s[kPrevious].select(0, 0);
  }
};

// ---- The loop --------------------------------------------------------------------------------

template <class Cell>
autograd::Grads backward(const Cell& cell, const Plan& plan, const Tensor& d_states,
                         const autograd::SavedTensors& saved) {
  constexpr std::int64_t parts = Cell::parts, gates = Cell::gates;
  const Order& order = plan.order;
  const auto [steps, batch, hidden] = order.sizes;
  const Tensor upstream = d_states.contiguous();
  backend::Backend& kernels = detail::backend_of(upstream);
  const Buffers buffers{upstream.dtype(), upstream.device(), order.packed};
  const Tensor& mask = saved[kMask];
  const Tensor& dropout = saved[kDropout];
  const Tensor& weight = saved[kWeight];

  Tensor d_input = buffers.for_rows({steps, batch, gates * hidden});
  Tensor d_projections = buffers.make({order.packed_rows, gates * hidden});  // packed
  // dL/d(each part of the state before the step), from the steps after it.
  Tensor carry = buffers.zeros({parts, batch, hidden});
  Tensor d_state = buffers.make({batch, parts * hidden});  // of the step's output, by row
  Tensor scratch = dropout.defined() ? buffers.make({batch, hidden}) : Tensor();
  // The gains' and biases' gradients of each step, summed over steps at the end.
  std::array<Tensor, 4> affine_steps;
  for (int k = 0; k < 4; ++k)
    if (plan.affine_wanted[k])
      affine_steps[k] = buffers.for_rows({steps, Cell::norm_widths[k] * hidden});

  std::array<backend::TensorRef, 4> parameter_refs;
  const auto step_norms = kernel_args::with_affine(
      cell.norms, std::span<const Tensor, 4>(saved.begin() + kAffine, 4), parameter_refs);
  const Shape by_part{batch, parts, hidden};

  for (std::int64_t i = steps; i-- > 0;) {
    Step step;
    step.i = i;
    step.t = order.step_at(i);
    step.count = order.rows_of(step.t);
    kernels.binary(backend::BinaryOp::Add, ref(d_state.reshape(by_part)),
                   ref(upstream.select(0, step.t).reshape(by_part)), ref(carry.transpose(0, 1)), 0);
    // The rows that skipped the step pass their gradients on to the state before it.
    if (step.count < batch)
      kernels.copy(ref(carry.narrow(1, step.count, batch - step.count)),
                   ref(later_rows(d_state, step.count)
                           .reshape({batch - step.count, parts, hidden})
                           .transpose(0, 1)));
    if (step.count == 0) continue;
    step.d_input = step.rows(d_input.select(0, step.t));
    step.d_projection = order.packed_rows_of(d_projections, step.t);
    step.d_state = d_state;
    for (std::int64_t p = 0; p < parts; ++p) step.d_prev[p] = step.rows(carry.select(0, p));
    for (int k = 0; k < 4; ++k)
      if (plan.affine_wanted[k]) step.d_affine[k] = affine_steps[k].select(0, step.t);
    backend::TensorRef mask_ref;
    step.mask = optional_ref(mask.defined() ? mask.select(0, step.t) : Tensor(), mask_ref);
    // dgx, dgh and the cell's part of d(state before), into carry, which d_state has consumed
    cell.backward(kernels, saved, order, step, step_norms);
    add_state_gradient(kernels, step.d_prev[0], step.d_projection, weight,
                       dropout.defined() ? step.rows(dropout) : Tensor(),
                       dropout.defined() ? step.rows(scratch) : Tensor());
  }

  autograd::Grads grads(parts + 3 + 4);
  grads[0] = d_input;
  for (std::int64_t p = 0; p < parts; ++p) grads[1 + p] = carry.select(0, p);  // dL/dh0, dL/dc0
  if (plan.weight_wanted) {
    // dW_hh = sum over steps of dgh_t^T (what W_hh read at step t): one product over all the
    // rows the steps computed.
    const Tensor reads = cell.weight_reads(saved);
    Tensor d_weight = order.packed_rows == 0 ? buffers.zeros({gates * hidden, hidden})
                                             : buffers.make({gates * hidden, hidden});
    if (order.packed_rows == 0) {
    } else if (reads.defined()) {
      kernels.matmul(ref(d_weight), ref(d_projections.t()), ref(reads), false);
    } else {
      // Every step computed all B rows, and the states are the h that W_hh read. The loop's
      // first step read the start; every later one read the state one step before it in the
      // loop, so those (T - 1) B rows meet the states shifted by one: a product over B rows,
      // then one over the other (T - 1) B rows added.
      const std::int64_t first = order.step_at(0);
      const Tensor first_products = d_projections.narrow(0, first * batch, batch);
      kernels.matmul(ref(d_weight), ref(first_products.t()), ref(saved[kStart]), false);
      if (steps > 1) {
        const std::int64_t later = order.reverse ? 0 : 1, read_from = order.reverse ? 1 : 0;
        const Tensor later_products = d_projections.narrow(0, later * batch, (steps - 1) * batch);
        const Tensor read =
            saved[kStates].narrow(0, read_from, steps - 1).reshape({(steps - 1) * batch, hidden});
        kernels.matmul(ref(d_weight), ref(later_products.t()), ref(read), true);
      }
    }
    grads[parts + 1] = d_weight;
  }
  if (plan.bias_wanted) grads[parts + 2] = d_projections.sum({0});
  for (int k = 0; k < 4; ++k)
    if (plan.affine_wanted[k]) grads[parts + 3 + k] = affine_steps[k].sum({0});
  return grads;
}

// Runs the loop from `start` [B, parts H] and records it. inputs: the op's differentiable
// inputs, [input_side, the start's parts, weight_hh, bias_hh, the four gains and biases];
// affine: those gains and biases checked and contiguous.
template <class Cell>
Tensor run(Cell cell, const Sizes& sizes, const Tensor& start, const std::vector<Tensor>& inputs,
           const std::array<Tensor, 4>& affine, const SequenceOptions& options) {
  constexpr std::int64_t parts = Cell::parts, gates = Cell::gates;
  const Tensor& input_side = inputs[0];
  const Tensor& weight = inputs[parts + 1];
  const Tensor& bias = inputs[parts + 2];
  const auto [steps, batch, hidden] = sizes;
  const DType dtype = input_side.dtype();
  const Buffers buffers{dtype, input_side.device()};
  Plan plan;
  plan.order = Order(sizes, options);
  const Order& order = plan.order;
  const Tensor x = input_side.contiguous().detach();
  backend::Backend& kernels = detail::backend_of(x);

  autograd::SavedTensors s(kSavedCount);
  s[kStates] = buffers.make({steps, batch, parts * hidden});
  s[kStart] = start;
  s[kProjections] = buffers.make({steps, batch, gates * hidden});
  s[kActivations] = buffers.make({steps, batch, gates * hidden});
  if (cell.keeps_statistics())
    s[kStatistics] =
        detail::make_tensor({steps, 4 * batch}, compute_dtype(dtype), input_side.device());
  s[kMask] = kernel_args::mask(options.mask, dtype);
  const Tensor& dropout = options.state_dropout;
  if (dropout.defined()) s[kDropout] = dropout.detach().to(dtype).contiguous();
  if (cell.keeps_reads(order, dropout.defined()))
    s[kReads] = buffers.make({order.packed_rows, hidden});
  s[kWeight] = weight.detach();
  for (int k = 0; k < 4; ++k) s[kAffine + k] = affine[k];
  cell.allocate(s, buffers, order);

  // The projections start from the bias at every step and row, which each step's product then
  // adds onto, as linear's does (addmm).
  if (bias.defined())
    kernels.copy(
        ref(s[kProjections]),
        ref(bias.detach().reshape({1, 1, gates * hidden}).expand(s[kProjections].shape())));
  const Tensor w_t = s[kWeight].t();
  std::array<backend::TensorRef, 4> affine_refs;
  const auto step_norms = kernel_args::with_affine(cell.norms, affine, affine_refs);

  for (std::int64_t i = 0; i < steps; ++i) {
    Step step;
    step.i = i;
    step.t = order.step_at(i);
    step.count = order.rows_of(step.t);
    const Tensor state_before = order.state_before(i, start, s[kStates]);
    const Tensor state = s[kStates].select(0, step.t);
    // The rows that skip the step keep their state.
    if (step.count < batch)
      kernels.copy(ref(later_rows(state, step.count)), ref(later_rows(state_before, step.count)));
    if (step.count == 0) continue;
    step.h_prev = cell.h_prev(kernels, s, order, step, state_before);
    const Tensor read =
        state_read(kernels, step.h_prev,
                   s[kReads].defined() ? order.packed_rows_of(s[kReads], step.t) : Tensor(),
                   s[kDropout].defined() ? step.rows(s[kDropout]) : Tensor());
    step.projection = step.rows(s[kProjections].select(0, step.t));
    kernels.matmul(ref(step.projection), ref(read), ref(w_t), bias.defined());
    step.x = step.rows(x.select(0, step.t));
    backend::TensorRef mask_ref;
    step.mask = optional_ref(s[kMask].defined() ? s[kMask].select(0, step.t) : Tensor(), mask_ref);
    cell.forward(kernels, s, order, step, step_norms);
  }

  const Tensor states = s[kStates];
  if (!autograd::needs_grad(inputs)) return states;
  for (int k = 0; k < 4; ++k) {
    const Tensor& parameter = inputs[parts + 3 + k];
    plan.affine_wanted[k] = parameter.defined() && parameter.requires_grad();
  }
  plan.weight_wanted = weight.requires_grad();
  plan.bias_wanted = bias.defined() && bias.requires_grad();
  autograd::record(
      Cell::node, states, inputs, std::move(s),
      [cell, plan = std::move(plan)](const Tensor& d_states, const autograd::SavedTensors& saved) {
        return backward(cell, plan, d_states, saved);
      });
  return states;
}

}  // namespace sequence_loop
}  // namespace

using namespace sequence_loop;

Tensor gru_sequence(const Tensor& input_side, const Tensor& h0, const Tensor& weight_in,
                    const Tensor& bias_in, const std::optional<GruStateNorms>& given_norms,
                    const SequenceOptions& options) {
  // Mixed precision: float32 parameters rounded for bfloat16 data (autograd/mixed_precision.h).
  const Tensor weight = in_input_dtype(weight_in, input_side);
  const Tensor bias = in_input_dtype(bias_in, input_side);
  std::optional<GruStateNorms> norms;
  if (given_norms)
    norms = GruStateNorms{kernel_args::for_input(given_norms->gates, input_side),
                          kernel_args::for_input(given_norms->candidate, input_side)};
  const Sizes sizes = check(GruCell::op, input_side, GruCell::gates, h0, weight, bias, options);
  GruCell cell;
  std::array<Tensor, 4> affine;  // the state norms' gains and biases, checked
  std::vector<Tensor> inputs = {input_side, h0, weight, bias};
  if (norms) {
    const kernel_args::GruNorms checked =
        kernel_args::gru_norms(*norms, sizes.hidden, input_side, GruCell::op);
    cell.normed = true;
    cell.norms = checked.params;
    affine = checked.affine;
    inputs.insert(inputs.end(), {norms->gates.gain, norms->gates.bias, norms->candidate.gain,
                                 norms->candidate.bias});
  } else {
    inputs.resize(8);
  }
  return run(cell, sizes, h0.contiguous().detach(), inputs, affine, options);
}

Tensor lstm_sequence(const Tensor& input_side, const Tensor& h0, const Tensor& c0,
                     const Tensor& weight_in, const Tensor& bias_in,
                     const LstmStepNorms& given_norms, const SequenceOptions& options) {
  const char* op = LstmCell::op;
  const Tensor weight = in_input_dtype(weight_in, input_side);
  const Tensor bias = in_input_dtype(bias_in, input_side);
  const LstmStepNorms norms = kernel_args::for_input(given_norms, input_side);
  const Sizes sizes = check(op, input_side, LstmCell::gates, h0, weight, bias, options);
  NG_CHECK(c0.defined() && c0.shape() == h0.shape(), op, "c0 must be ", h0.shape(),
           " as h0 is, got ", c0.defined() ? c0.shape() : Shape{});
  autograd::primitive::check_same_dtype(input_side, c0, op);
  autograd::primitive::check_same_device(input_side, c0, op);
  const kernel_args::LstmNorms checked =
      kernel_args::lstm_norms(norms, sizes.hidden, input_side, op);
  LstmCell cell;
  cell.norms = checked.params;
  const RowNorm none;
  const RowNorm& state_norm = norms.state ? *norms.state : none;
  const RowNorm& cell_norm = norms.cell ? *norms.cell : none;
  const std::vector<Tensor> inputs = {
      input_side,    h0, c0, weight, bias, state_norm.gain, state_norm.bias, cell_norm.gain,
      cell_norm.bias};
  const Tensor start = cat({h0.detach(), c0.detach()}, 1);  // [h0 | c0]
  return run(cell, sizes, start, inputs, checked.affine, options);
}

}  // namespace normgrad
