#pragma once
// What the one-op recurrent loops (gru_sequence.cpp, lstm_sequence.cpp) share: their operands'
// checks, and the plan of which rows each step computes and where those rows lie when packed.
// Internal to nn/.

#include <cstdint>
#include <iterator>
#include <vector>

#include "autograd/primitives.h"
#include "backends/backend.h"
#include "base/error.h"
#include "core/tensor.h"
#include "core/tensor_internal.h"
#include "autograd/functions/recurrent_sequence_options.h"

namespace normgrad::sequence_steps {

struct Sizes {
  std::int64_t steps, batch, hidden;
};

// Checks input_side [T > 0, B, gates H], h0 [B, H], weight_hh [gates H, H], bias_hh [gates H]
// (or undefined) and `options` against them; an Error names `op` and the operand.
inline Sizes check(const char* op, const Tensor& x, std::int64_t gates, const Tensor& h0,
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
struct Plan {
  Sizes sizes{};
  bool reverse = false;
  bool packed = false;  // batch_sizes given: step t computes its first rows[t] rows only
  // By time step: the rows it computes, and where they start in the packed matrices of state-
  // side products and their gradients ([packed_rows, ...]: each step's rows after the last's).
  std::vector<std::int64_t> rows, offset;
  std::int64_t packed_rows = 0;

  Plan() = default;
  Plan(const Sizes& sizes_in, const SequenceOptions& options)
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
inline Tensor first_rows(const Tensor& x, std::int64_t count) {
  return x.size(0) == count ? x : x.narrow(0, 0, count);
}

// The rows after the first `count`.
inline Tensor later_rows(const Tensor& x, std::int64_t count) {
  return x.narrow(0, count, x.size(0) - count);
}

// Step t's statistics of its `count` rows: contiguous [4, count] at the start of its [4 B] row
// of statistics [T, 4 B].
inline Tensor step_statistics(const Tensor& statistics, std::int64_t t, std::int64_t count) {
  return statistics.select(0, t).narrow(0, 0, 4 * count).reshape({4, count});
}

// New tensors of one dtype and device, for an op's buffers.
struct Buffers {
  DType dtype;
  Device device;
  bool packed = false;

  Tensor make(const Shape& shape) const {
    return normgrad::detail::make_tensor(shape, dtype, device);
  }
  Tensor zeros(const Shape& shape) const {
    return normgrad::zeros(shape, {.dtype = dtype, .device = device});
  }
  // A gradient buffer by step: packed, the rows a step skips get no gradient, so it starts at
  // zero; otherwise every entry is written.
  Tensor for_rows(const Shape& shape) const { return packed ? zeros(shape) : make(shape); }
};

// projections [T, B, G] filled with bias [G] at every step and row, which each step's product
// then adds onto, as linear's does (addmm); left as it is without a bias.
inline void start_from_bias(backend::Backend& kernels, const Tensor& projections,
                            const Tensor& bias) {
  if (!bias.defined()) return;
  const Shape shape = projections.shape();
  kernels.copy(normgrad::detail::ref(projections),
               normgrad::detail::ref(bias.detach().reshape({1, 1, shape[2]}).expand(shape)));
}

// The state dropout as the kernels read it: detached, in the data's dtype, contiguous.
inline Tensor dropout_mask(const SequenceOptions& options, DType dtype) {
  const Tensor& mask = options.state_dropout;
  return mask.defined() ? mask.detach().to(dtype).contiguous() : Tensor();
}

// What W_hh reads at a step: h_prev [rows, H] itself, or, where `read` is defined (its rows of
// a kept matrix), h_prev copied there, times the dropout mask's rows where there is one.
inline Tensor state_read(backend::Backend& kernels, const Tensor& h_prev, const Tensor& read,
                         const Tensor& dropout) {
  using normgrad::detail::ref;
  if (!read.defined()) return h_prev;
  if (dropout.defined())
    kernels.binary(backend::BinaryOp::Mul, ref(read), ref(h_prev), ref(dropout), 0);
  else
    kernels.copy(ref(read), ref(h_prev));
  return read;
}

// d_prev += dgh W_hh at a step, times the dropout mask's rows where W_hh read a masked state
// (`scratch` then holds the product).
inline void add_state_gradient(backend::Backend& kernels, const Tensor& d_prev,
                               const Tensor& d_projection, const Tensor& weight,
                               const Tensor& dropout, const Tensor& scratch) {
  using normgrad::detail::ref;
  if (!dropout.defined()) {
    kernels.matmul(ref(d_prev), ref(d_projection), ref(weight), true);
    return;
  }
  kernels.matmul(ref(scratch), ref(d_projection), ref(weight), false);
  kernels.binary(backend::BinaryOp::Mul, ref(scratch), ref(scratch), ref(dropout), 0);
  kernels.binary(backend::BinaryOp::Add, ref(d_prev), ref(d_prev), ref(scratch), 0);
}

}  // namespace normgrad::sequence_steps
