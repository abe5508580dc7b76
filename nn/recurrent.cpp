#include "nn/recurrent.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <vector>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "base/error.h"
#include "nn/functional.h"
#include "nn/init.h"
#include "nn/norms/batch_norm.h"
#include "profiler/recorder.h"

namespace normgrad::nn {

// ---- RecurrentCell -------------------------------------------------------------------------

RecurrentCell::RecurrentCell(std::int64_t input_size, std::int64_t hidden_size, std::int64_t gates,
                             const RecurrentCellOptions& options, Generator& generator)
    : input_size_(input_size), hidden_size_(hidden_size), options_(options), spec_(options.norm) {
  NG_CHECK(input_size > 0 && hidden_size > 0, "RecurrentCell",
           "input_size and hidden_size must be positive, got ", input_size, " and ", hidden_size);
  NG_CHECK(is_floating(options.dtype), "RecurrentCell", "expects a floating-point dtype, got ",
           options.dtype);
  const double bound = 1.0 / std::sqrt(static_cast<double>(hidden_size));
  const TensorOptions tensor_options{.dtype = options.dtype};
  const auto uniform = [&](const Shape& shape) {
    return init::uniform_(empty(shape, tensor_options), -bound, bound, generator);
  };
  Tensor w_ih = uniform({gates * hidden_size, input_size});
  Tensor w_hh = uniform({gates * hidden_size, hidden_size});
  if (spec_.reparameterises_weight()) {
    weight_ih_norm_ = register_module("weight_ih", std::make_shared<WeightNorm>(w_ih));
    weight_hh_norm_ = register_module("weight_hh", std::make_shared<WeightNorm>(w_hh));
  } else {
    weight_ih_ = register_parameter("weight_ih", w_ih);
    weight_hh_ = register_parameter("weight_hh", w_hh);
  }
  if (options.bias) bias_ih = register_parameter("bias_ih", uniform({gates * hidden_size}));
  if (options.recurrent_bias)
    bias_hh = register_parameter("bias_hh", uniform({gates * hidden_size}));
}

void RecurrentCell::set_weights(const Tensor& weight_ih, const Tensor& weight_hh) {
  const Shape ih_shape = weight_ih_norm_ ? weight_ih_norm_->direction.shape() : weight_ih_.shape();
  const Shape hh_shape = weight_hh_norm_ ? weight_hh_norm_->direction.shape() : weight_hh_.shape();
  NG_CHECK(weight_ih.defined() && weight_ih.shape() == ih_shape && weight_hh.defined() &&
               weight_hh.shape() == hh_shape,
           type_name(), "::set_weights expects W_ih ", ih_shape, " and W_hh ", hh_shape, ", got ",
           weight_ih.defined() ? weight_ih.shape() : Shape{}, " and ",
           weight_hh.defined() ? weight_hh.shape() : Shape{});
  NoGradGuard no_grad;
  if (weight_ih_norm_) {
    weight_ih_norm_->reset(weight_ih.to(options_.dtype));
    weight_hh_norm_->reset(weight_hh.to(options_.dtype));
  } else {
    weight_ih_.copy_(weight_ih.to(options_.dtype));
    weight_hh_.copy_(weight_hh.to(options_.dtype));
  }
}

std::optional<std::vector<Tensor>> RecurrentCell::run_sequence(const Tensor&,
                                                               const std::vector<Tensor>&,
                                                               const normgrad::SequenceOptions&) {
  return std::nullopt;
}

Tensor RecurrentCell::weight_ih() const {
  return weight_ih_norm_ ? weight_ih_norm_->weight() : weight_ih_;
}

Tensor RecurrentCell::weight_hh() const {
  return weight_hh_norm_ ? weight_hh_norm_->weight() : weight_hh_;
}

Tensor RecurrentCell::project_input(const Tensor& x) const {
  NG_CHECK(x.defined() && x.dim() >= 1 && x.size(-1) == input_size_, type_name(),
           "input must end in input_size = ", input_size_, ", got ",
           x.defined() ? x.shape() : Shape{});
  return functional::linear(x, weight_ih(), bias_ih);
}

Tensor RecurrentCell::project_state(const Tensor& h) const {
  return functional::linear(h, weight_hh(), bias_hh);
}

Tensor RecurrentCell::project_state(const Tensor& h, const Tensor& state_dropout) const {
  if (!state_dropout.defined()) return project_state(h);
  NG_CHECK(state_dropout.shape() == h.shape(), type_name(),
           "state_dropout must be the state's shape ", h.shape(), ", got ", state_dropout.shape());
  return project_state(h * state_dropout.detach().to(h.dtype()));
}

std::shared_ptr<Norm> RecurrentCell::add_norm(const std::string& name, std::int64_t features) {
  if (spec_.kind != NormKind::BatchNorm)
    return register_module(name, make_norm(spec_, features, NormLayout::Features, options_.dtype));
  // Recurrent batch normalisation (Cooijmans et al. 2017): see RecurrentCellOptions.
  return register_module(name,
                         std::make_shared<RecurrentBatchNorm>(features, spec_, options_.dtype));
}

RecurrentBatchNorm::RecurrentBatchNorm(std::int64_t features, const NormSpec& spec, DType dtype)
    : norm_(
          register_module("norm", std::make_shared<BatchNorm1d>(
                                      features, BatchNormOptions{.eps = spec.eps.value_or(1e-5),
                                                                 .affine = spec.bias.value_or(true),
                                                                 .track_running_stats = false,
                                                                 .dtype = dtype}))) {
  if (norm_->gain.defined()) init::constant_(norm_->gain, 0.1);
}

Tensor RecurrentBatchNorm::forward(const Tensor& x) {
  const profiler::ModuleSpan span(this, "RecurrentBatchNorm");

  // [..., F] as rows [N, F]: one step's batch, or every step's rows of the input side.
  const std::int64_t features = norm_->num_features();
  NG_CHECK(x.defined() && x.dim() >= 1 && x.size(-1) == features, type_name(), "expects [..., ",
           features, "], got ", x.defined() ? x.shape() : Shape{});
  const Tensor rows = x.reshape({-1, features});
  // A step that computes one row (the last of a packed batch's longest sequence) has that row
  // for its mean and no variance: normalised, it is 0, and the output is the bias.
  if (rows.size(0) == 1)
    return (norm_->bias.defined() ? x * 0.0 + norm_->bias : x * 0.0).reshape(x.shape());
  return norm_->forward(rows).reshape(x.shape());
}

// ---- sequence_mask -------------------------------------------------------------------------

namespace {

// The lengths on the host, each checked to lie in [0, max_length].
std::vector<std::int64_t> checked_lengths(const Tensor& lengths, std::int64_t max_length,
                                          const std::string& op) {
  const std::vector<std::int64_t> values = lengths.to(Device::cpu()).to_vector<std::int64_t>();
  for (std::size_t b = 0; b < values.size(); ++b)
    NG_CHECK(values[b] >= 0 && values[b] <= max_length, op, "length ", values[b], " of row ", b,
             " is outside [0, ", max_length, "]");
  return values;
}

}  // namespace

Tensor sequence_mask(const Tensor& lengths, std::int64_t max_length, bool batch_first,
                     DType dtype) {
  NG_CHECK(lengths.defined() && lengths.dim() == 1 && lengths.dtype() == DType::Int64,
           "sequence_mask", "lengths must be int64 [batch], got ",
           lengths.defined() ? lengths.shape() : Shape{}, " of dtype ",
           lengths.defined() ? lengths.dtype() : DType::Int64);
  NG_CHECK(max_length >= 0, "sequence_mask", "max_length must be non-negative, got ", max_length);
  checked_lengths(lengths, max_length, "sequence_mask");
  const Tensor steps =
      arange(static_cast<double>(max_length), {.dtype = DType::Int64, .device = lengths.device()});
  const Tensor mask = lt(steps.unsqueeze(0), lengths.detach().unsqueeze(1)).to(dtype);  // [B, T]
  return batch_first ? mask : mask.t().contiguous();
}

// ---- Recurrent -----------------------------------------------------------------------------

Recurrent::Recurrent(const CellFactory& make_cell, const RecurrentOptions& options)
    : options_(options) {
  cells_.push_back(register_module("forward", make_cell()));
  if (options.bidirectional) cells_.push_back(register_module("reverse", make_cell()));
}

RecurrentCell& Recurrent::cell(std::int64_t direction) const {
  NG_CHECK(direction >= 0 && direction < directions(), type_name(), "direction ", direction,
           " does not exist; this layer has ", directions());
  return *cells_[direction];
}

namespace {

// Direction d's slice of an initial state [D, B, H] in the input's dtype, or zeros.
Tensor initial_slice(const Tensor& initial, std::int64_t direction, std::int64_t batch,
                     std::int64_t hidden, const TensorOptions& options) {
  if (!initial.defined()) return zeros({batch, hidden}, options);
  return initial.select(0, direction).to(options.dtype);
}

}  // namespace

void Recurrent::check_arguments(const Tensor& input, const Tensor& mask,
                                const Tensor& initial_hidden, const Tensor& initial_cell,
                                const Tensor& state_dropout) const {
  const std::string name = type_name();
  const RecurrentCell& first = *cells_.front();
  const std::int64_t hidden = first.hidden_size(), count = directions();
  NG_CHECK(input.defined() && input.dim() == 3 && input.size(2) == first.input_size(), name,
           "input must be [", options_.batch_first ? "batch, steps" : "steps, batch", ", ",
           first.input_size(), "], got ", input.defined() ? input.shape() : Shape{});
  // Mixed precision: a float32 layer runs bfloat16 input with its weights rounded for the step's
  // products and norms (autograd/mixed_precision.h); its state is then bfloat16 too.
  const DType dtype = first.options().dtype;
  NG_CHECK(input.dtype() == dtype || (input.dtype() == DType::BFloat16 && dtype == DType::Float32),
           name, "input of dtype ", input.dtype(), " does not match the layer's dtype ", dtype,
           " (a float32 layer also takes bfloat16 input)");
  const std::int64_t batch = input.size(options_.batch_first ? 0 : 1);
  NG_CHECK(!mask.defined() || mask.shape() == Shape({input.size(0), input.size(1)}), name,
           "mask must have the input's first two dims ", Shape({input.size(0), input.size(1)}),
           ", got ", mask.defined() ? mask.shape() : Shape{});
  const Shape state_shape{count, batch, hidden};
  NG_CHECK(!initial_hidden.defined() || initial_hidden.shape() == state_shape, name,
           "initial_hidden must be ", state_shape, ", got ",
           initial_hidden.defined() ? initial_hidden.shape() : Shape{});
  const std::size_t state_count = first.state_count();
  NG_CHECK(!initial_cell.defined() || state_count == 2, name,
           "has no cell state; initial_cell must be left undefined");
  NG_CHECK(!initial_cell.defined() || initial_cell.shape() == state_shape, name,
           "initial_cell must be ", state_shape, ", got ",
           initial_cell.defined() ? initial_cell.shape() : Shape{});
  NG_CHECK(!state_dropout.defined() || state_dropout.shape() == state_shape, name,
           "state_dropout must be ", state_shape, ", got ",
           state_dropout.defined() ? state_dropout.shape() : Shape{});
}

RecurrentOutput Recurrent::forward(const Tensor& input, const Tensor& mask,
                                   const Tensor& initial_hidden, const Tensor& initial_cell,
                                   const Tensor& state_dropout) {
  const profiler::ModuleSpan span(this, "Recurrent");

  check_arguments(input, mask, initial_hidden, initial_cell, state_dropout);
  const RecurrentCell& first = *cells_.front();
  const std::int64_t hidden = first.hidden_size(), count = directions();
  const std::size_t state_count = first.state_count();
  const Tensor x = options_.batch_first ? input.transpose(0, 1) : input;  // [T, B, I]
  const std::int64_t steps = x.size(0), batch = x.size(1);
  std::vector<Tensor> step_masks;
  Tensor time_major_mask;
  if (mask.defined()) {
    time_major_mask = (options_.batch_first ? mask.t() : mask).detach().contiguous();
    step_masks = unbind(time_major_mask, 0);
  }
  const std::int64_t time_dim = options_.batch_first ? 1 : 0;
  const TensorOptions like_x{.dtype = x.dtype(), .device = x.device()};
  std::vector<Tensor> outputs, finals, final_cells;
  for (std::int64_t direction = 0; direction < count; ++direction) {
    RecurrentCell& cell = *cells_[direction];
    const Tensor input_side = cell.input_side(x);  // [T, B, gates H]
    std::vector<Tensor> state{initial_slice(initial_hidden, direction, batch, hidden, like_x)};
    if (state_count == 2)
      state.push_back(initial_slice(initial_cell, direction, batch, hidden, like_x));
    const Tensor dropout = state_dropout.defined() ? state_dropout.select(0, direction) : Tensor();
    if (steps > 0)
      if (const auto states = cell.run_sequence(
              input_side, state,
              {.mask = time_major_mask, .state_dropout = dropout, .reverse = direction == 1})) {
        const Tensor& h = (*states)[0];
        const std::int64_t last = direction == 0 ? steps - 1 : 0;
        outputs.push_back((options_.batch_first ? h.transpose(0, 1) : h).contiguous());
        finals.push_back(h.select(0, last));
        if (state_count == 2) final_cells.push_back((*states)[1].select(0, last));
        continue;
      }
    const std::vector<Tensor> inputs = unbind(input_side, 0);  // T x [B, gates H]
    std::vector<Tensor> per_step(steps);
    for (std::int64_t i = 0; i < steps; ++i) {
      const std::int64_t t = direction == 0 ? i : steps - 1 - i;
      state = cell.step(inputs[t], state, mask.defined() ? step_masks[t] : Tensor(), dropout);
      per_step[t] = state[0];
    }
    outputs.push_back(steps > 0 ? stack(per_step, time_dim)
                                : zeros(Shape{options_.batch_first ? batch : 0,
                                              options_.batch_first ? 0 : batch, hidden},
                                        like_x));
    finals.push_back(state[0]);
    if (state_count == 2) final_cells.push_back(state[1]);
  }
  RecurrentOutput result;
  result.output = count == 1 ? outputs[0] : cat(outputs, -1);
  if (mask.defined())
    result.output = result.output * ne(mask.detach(), 0.0).to(x.dtype()).unsqueeze(-1);
  result.hidden = stack(finals, 0);
  if (state_count == 2) result.cell = stack(final_cells, 0);
  return result;
}

namespace {

// The rows of a batch ordered by length, longest first (stable), and what forward_lengths
// derives from that order.
struct LengthOrder {
  std::vector<std::int64_t> order;     // order[i]: the row at sorted position i
  std::vector<std::int64_t> position;  // position[row]: its sorted position
  std::vector<std::int64_t> sorted;    // the lengths in sorted order
  bool identity = true;                // already sorted
  Tensor order_index;                  // order as an int64 tensor on the input's device

  // The rows still going at step t: a prefix of the sorted batch.
  std::int64_t active(std::int64_t t) const {
    return std::lower_bound(sorted.begin(), sorted.end(), t, std::greater<>()) - sorted.begin();
  }
};

LengthOrder order_by_length(const std::vector<std::int64_t>& lengths, Device device) {
  LengthOrder result;
  const std::size_t batch = lengths.size();
  result.order.resize(batch);
  std::iota(result.order.begin(), result.order.end(), std::int64_t{0});
  std::stable_sort(result.order.begin(), result.order.end(), [&](std::int64_t a, std::int64_t b) {
    return lengths[static_cast<std::size_t>(a)] > lengths[static_cast<std::size_t>(b)];
  });
  result.position.resize(batch);
  result.sorted.resize(batch);
  for (std::size_t i = 0; i < batch; ++i) {
    const auto row = static_cast<std::size_t>(result.order[i]);
    result.position[row] = static_cast<std::int64_t>(i);
    result.sorted[i] = lengths[row];
    result.identity = result.identity && row == i;
  }
  result.order_index = from_vector(result.order, {static_cast<std::int64_t>(batch)}).to(device);
  return result;
}

// x's first `rows` rows (dim 0), or x itself when it has no more.
Tensor first_rows(const Tensor& x, std::int64_t rows) {
  return !x.defined() || x.size(0) == rows ? x : x.narrow(0, 0, rows);
}

}  // namespace

// Packed like PyTorch's pack_padded_sequence, without asking the caller to pack: the rows are
// sorted by length, so that at every step the sequences still going are a prefix of the batch,
// and each step runs the cell on that prefix alone. Padded steps cost nothing, where forward
// with a mask runs the whole batch at every step. The outputs of every step are gathered back
// into the caller's row order in one index_select, zeros at padding. A cell that runs its loop
// as one op (run_sequence) is handed the same prefix counts as packed batch sizes.
RecurrentOutput Recurrent::forward_lengths(const Tensor& input, const Tensor& lengths,
                                           const Tensor& initial_hidden, const Tensor& initial_cell,
                                           const Tensor& state_dropout) {
  const std::string name = type_name();
  NG_CHECK(input.defined() && input.dim() == 3, name, "input must be 3-d, got ",
           input.defined() ? input.shape() : Shape{});
  const std::int64_t steps = input.size(options_.batch_first ? 1 : 0);
  const std::int64_t batch = input.size(options_.batch_first ? 0 : 1);
  NG_CHECK(lengths.defined() && lengths.shape() == Shape({batch}), name, "lengths must be [", batch,
           "], got ", lengths.defined() ? lengths.shape() : Shape{});
  check_arguments(input, Tensor(), initial_hidden, initial_cell, state_dropout);
  NG_CHECK(lengths.dtype() == DType::Int64, name, "lengths must be int64, got ", lengths.dtype());
  const std::vector<std::int64_t> host_lengths = checked_lengths(lengths, steps, name);
  // A batch without padding is the packed run already.
  if (std::all_of(host_lengths.begin(), host_lengths.end(),
                  [&](std::int64_t length) { return length == steps; }))
    return forward(input, Tensor(), initial_hidden, initial_cell, state_dropout);

  const LengthOrder order = order_by_length(host_lengths, input.device());
  const auto sorted_rows = [&](const Tensor& x, std::int64_t dim) {  // rows in sorted order
    return !x.defined() || order.identity ? x : index_select(x, dim, order.order_index);
  };
  const RecurrentCell& first = *cells_.front();
  const std::int64_t hidden = first.hidden_size(), count = directions();
  const std::size_t state_count = first.state_count();
  const Tensor x = sorted_rows(options_.batch_first ? input.transpose(0, 1) : input, 1);
  const TensorOptions like_x{.dtype = x.dtype(), .device = x.device()};
  const Tensor hidden0 = sorted_rows(initial_hidden, 1), cell0 = sorted_rows(initial_cell, 1),
               dropout_all = sorted_rows(state_dropout, 1);

  // Step t runs the sorted rows [0, batch_sizes[t]); its outputs land in the packed outputs
  // from offset[t] on.
  std::vector<std::int64_t> batch_sizes(static_cast<std::size_t>(steps)), offset(batch_sizes);
  std::int64_t packed_rows = 0;
  for (std::int64_t t = 0; t < steps; ++t) {
    batch_sizes[static_cast<std::size_t>(t)] = order.active(t);
    offset[static_cast<std::size_t>(t)] = packed_rows;
    packed_rows += order.active(t);
  }
  // The gather from the rows of [step outputs; a zero row] to the output's layout in the
  // caller's order, where sorted row i of step t is row at(t, i) and padding reads zero_row.
  const auto output_index = [&](const auto& at, std::int64_t zero_row) {
    std::vector<std::int64_t> gather(static_cast<std::size_t>(steps * batch));
    for (std::int64_t row = 0; row < batch; ++row)
      for (std::int64_t t = 0; t < steps; ++t) {
        const std::int64_t i = order.position[static_cast<std::size_t>(row)];
        const std::int64_t position = options_.batch_first ? row * steps + t : t * batch + row;
        gather[static_cast<std::size_t>(position)] = i < order.active(t) ? at(t, i) : zero_row;
      }
    return from_vector(gather, {steps * batch}).to(input.device());
  };
  Tensor packed_index, sequence_index;  // for the packed steps, for a direction run as one op
  const Tensor inverse_index = from_vector(order.position, {batch}).to(input.device());
  const auto unsorted = [&](const std::vector<Tensor>& sorted_pieces) {
    const Tensor joined = sorted_pieces.size() == 1 ? sorted_pieces[0] : cat(sorted_pieces, 0);
    return order.identity ? joined : index_select(joined, 0, inverse_index);
  };
  const Shape output_shape =
      options_.batch_first ? Shape{batch, steps, hidden} : Shape{steps, batch, hidden};

  std::vector<Tensor> outputs, finals, final_cells;
  for (std::int64_t direction = 0; direction < count; ++direction) {
    RecurrentCell& cell = *cells_[direction];
    const Tensor input_side = cell.input_side(x);  // [T, B, gates H]
    std::vector<Tensor> initial{initial_slice(hidden0, direction, batch, hidden, like_x)};
    if (state_count == 2) initial.push_back(initial_slice(cell0, direction, batch, hidden, like_x));
    const Tensor dropout = dropout_all.defined() ? dropout_all.select(0, direction) : Tensor();
    if (const auto states = cell.run_sequence(
            input_side, initial,
            {.batch_sizes = batch_sizes, .state_dropout = dropout, .reverse = direction == 1})) {
      // Each sorted row holds its state through the steps it skips: its final state is the
      // last step's (the first's in reverse).
      if (!sequence_index.defined())
        sequence_index = output_index([&](std::int64_t t, std::int64_t i) { return t * batch + i; },
                                      steps * batch);
      const Tensor& h = (*states)[0];
      const Tensor rows = cat({h.reshape({steps * batch, hidden}), zeros({1, hidden}, like_x)}, 0);
      outputs.push_back(index_select(rows, 0, sequence_index).reshape(output_shape));
      const std::int64_t last = direction == 0 ? steps - 1 : 0;
      finals.push_back(unsorted({h.select(0, last)}));
      if (state_count == 2) final_cells.push_back(unsorted({(*states)[1].select(0, last)}));
      continue;
    }
    const std::vector<Tensor> inputs = unbind(input_side, 0);  // T x [B, gates H]
    std::vector<Tensor> packed(static_cast<std::size_t>(steps));
    std::vector<std::vector<Tensor>> final_pieces(state_count);  // rows in sorted order
    std::vector<Tensor> state;
    std::int64_t rows = 0;
    const auto run_step = [&](std::int64_t t) {
      state = cell.step(first_rows(inputs[static_cast<std::size_t>(t)], rows), state, Tensor(),
                        first_rows(dropout, rows));
      packed[static_cast<std::size_t>(t)] = state[0];
    };
    if (direction == 0) {
      // Forward in time: rows leave the prefix as their sequences end, keeping their state.
      state = initial;
      rows = batch;
      std::vector<std::vector<Tensor>> ended(state_count);  // later pieces hold earlier rows
      for (std::int64_t t = 0; t <= steps; ++t) {
        const std::int64_t active = t < steps ? order.active(t) : 0;
        if (active < rows) {
          for (std::size_t k = 0; k < state_count; ++k) {
            ended[k].push_back(state[k].narrow(0, active, rows - active));
            state[k] = first_rows(state[k], active);
          }
          rows = active;
        }
        if (rows == 0) break;
        run_step(t);
      }
      for (std::size_t k = 0; k < state_count; ++k)
        final_pieces[k].assign(ended[k].rbegin(), ended[k].rend());
    } else {
      // Backward in time: rows join the prefix at their last step, from their initial state.
      for (std::int64_t t = steps - 1; t >= 0; --t) {
        const std::int64_t active = order.active(t);
        if (active > rows) {
          state.resize(state_count);
          for (std::size_t k = 0; k < state_count; ++k) {
            const Tensor joining = initial[k].narrow(0, rows, active - rows);
            state[k] = rows == 0 ? joining : cat({state[k], joining}, 0);
          }
          rows = active;
        }
        if (rows > 0) run_step(t);
      }
      for (std::size_t k = 0; k < state_count; ++k) {
        if (rows > 0) final_pieces[k].push_back(state[k]);
        if (rows < batch) final_pieces[k].push_back(initial[k].narrow(0, rows, batch - rows));
      }
    }
    std::vector<Tensor> pieces;
    for (const Tensor& step_output : packed)
      if (step_output.defined()) pieces.push_back(step_output);
    pieces.push_back(zeros({1, hidden}, like_x));  // what padded positions read
    if (!packed_index.defined())
      packed_index = output_index(
          [&](std::int64_t t, std::int64_t i) { return offset[static_cast<std::size_t>(t)] + i; },
          packed_rows);
    outputs.push_back(index_select(cat(pieces, 0), 0, packed_index).reshape(output_shape));
    finals.push_back(unsorted(final_pieces[0]));
    if (state_count == 2) final_cells.push_back(unsorted(final_pieces[1]));
  }
  RecurrentOutput result;
  result.output = count == 1 ? outputs[0] : cat(outputs, -1);
  result.hidden = stack(finals, 0);
  if (state_count == 2) result.cell = stack(final_cells, 0);
  return result;
}

}  // namespace normgrad::nn
