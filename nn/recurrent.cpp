#include "nn/recurrent.h"

#include <cmath>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "core/error.h"
#include "nn/functional.h"
#include "nn/init.h"

namespace normgrad::nn {

// ---- RecurrentCell -------------------------------------------------------------------------

RecurrentCell::RecurrentCell(std::int64_t input_size, std::int64_t hidden_size, std::int64_t gates,
                             const RecurrentCellOptions& options, Generator& generator)
    : input_size_(input_size), hidden_size_(hidden_size), options_(options), spec_(options.norm) {
  NG_CHECK(input_size > 0 && hidden_size > 0, "RecurrentCell",
           "input_size and hidden_size must be positive, got ", input_size, " and ", hidden_size);
  NG_CHECK(is_floating(options.dtype), "RecurrentCell", "expects a floating-point dtype, got ",
           options.dtype);
  // BatchNorm would normalise each step over the batch with running statistics shared by every
  // step: recurrent batch norm, a different method, and not what the paper compares.
  NG_CHECK(spec_.kind != NormKind::BatchNorm, "RecurrentCell", "norm '", spec_.str(),
           "' is not supported in a recurrent cell; use none, layernorm, "
           "rmsnorm, prmsnorm, l2norm or weightnorm");
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
  return project_state(h * state_dropout.detach());
}

std::shared_ptr<Norm> RecurrentCell::add_norm(const std::string& name, std::int64_t features) {
  return register_module(name, make_norm(spec_, features, NormLayout::Features, options_.dtype));
}

// ---- sequence_mask -------------------------------------------------------------------------

Tensor sequence_mask(const Tensor& lengths, std::int64_t max_length, bool batch_first,
                     DType dtype) {
  NG_CHECK(lengths.defined() && lengths.dim() == 1 && lengths.dtype() == DType::Int64,
           "sequence_mask", "lengths must be int64 [batch], got ",
           lengths.defined() ? lengths.shape() : Shape{}, " of dtype ",
           lengths.defined() ? lengths.dtype() : DType::Int64);
  NG_CHECK(max_length >= 0, "sequence_mask", "max_length must be non-negative, got ", max_length);
  const std::vector<std::int64_t> values = lengths.to_vector<std::int64_t>();
  for (std::size_t b = 0; b < values.size(); ++b)
    NG_CHECK(values[b] >= 0 && values[b] <= max_length, "sequence_mask", "length ", values[b],
             " of row ", b, " is outside [0, ", max_length, "]");
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

// Direction d's slice of an initial state [D, B, H], or zeros.
Tensor initial_slice(const Tensor& initial, std::int64_t direction, std::int64_t batch,
                     std::int64_t hidden, const TensorOptions& options) {
  if (!initial.defined()) return zeros({batch, hidden}, options);
  return initial.select(0, direction);
}

}  // namespace

RecurrentOutput Recurrent::forward(const Tensor& input, const Tensor& mask,
                                   const Tensor& initial_hidden, const Tensor& initial_cell,
                                   const Tensor& state_dropout) {
  const std::string name = type_name();
  const RecurrentCell& first = *cells_.front();
  const std::int64_t hidden = first.hidden_size(), count = directions();
  NG_CHECK(input.defined() && input.dim() == 3 && input.size(2) == first.input_size(), name,
           "input must be [", options_.batch_first ? "batch, steps" : "steps, batch", ", ",
           first.input_size(), "], got ", input.defined() ? input.shape() : Shape{});
  NG_CHECK(input.dtype() == first.options().dtype, name, "input of dtype ", input.dtype(),
           " does not match the layer's dtype ", first.options().dtype);
  const Tensor x = options_.batch_first ? input.transpose(0, 1) : input;  // [T, B, I]
  const std::int64_t steps = x.size(0), batch = x.size(1);
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
    const std::vector<Tensor> inputs = unbind(cell.input_side(x), 0);  // T x [B, gates H]
    std::vector<Tensor> state{initial_slice(initial_hidden, direction, batch, hidden, like_x)};
    if (state_count == 2)
      state.push_back(initial_slice(initial_cell, direction, batch, hidden, like_x));
    const Tensor dropout = state_dropout.defined() ? state_dropout.select(0, direction) : Tensor();
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

RecurrentOutput Recurrent::forward_lengths(const Tensor& input, const Tensor& lengths,
                                           const Tensor& initial_hidden, const Tensor& initial_cell,
                                           const Tensor& state_dropout) {
  NG_CHECK(input.defined() && input.dim() == 3, type_name(), "input must be 3-d, got ",
           input.defined() ? input.shape() : Shape{});
  const std::int64_t steps = input.size(options_.batch_first ? 1 : 0);
  const std::int64_t batch = input.size(options_.batch_first ? 0 : 1);
  NG_CHECK(lengths.defined() && lengths.shape() == Shape({batch}), type_name(), "lengths must be [",
           batch, "], got ", lengths.defined() ? lengths.shape() : Shape{});
  return forward(input, sequence_mask(lengths, steps, options_.batch_first, input.dtype()),
                 initial_hidden, initial_cell, state_dropout);
}

}  // namespace normgrad::nn
