#include "autograd/functions/recurrent.h"

#include <array>
#include <span>
#include <vector>

#include "autograd/ops.h"
#include "autograd/primitives.h"
#include "autograd/record.h"
#include "base/error.h"
#include "core/tensor_internal.h"
#include "autograd/functions/recurrent_kernel_args.h"

namespace normgrad {

namespace {

// Checks a step's operands: x [B, gates H] and state [B, H] of one floating dtype and device,
// and an optional mask [B]. Returns H.
std::int64_t check_step(const Tensor& x, std::int64_t gates, const Tensor& state,
                        const Tensor& mask, const char* op, const char* x_name) {
  NG_CHECK(x.defined() && state.defined(), op, x_name, " and the previous state must be defined");
  autograd::primitive::check_floating(x, op);
  autograd::primitive::check_same_dtype(x, state, op);
  autograd::primitive::check_same_device(x, state, op);
  NG_CHECK(state.dim() == 2, op, "the previous state must be [batch, hidden], got ", state.shape());
  const std::int64_t batch = state.size(0), hidden = state.size(1);
  NG_CHECK(x.shape() == Shape({batch, gates * hidden}), op, x_name, " must be [", batch, ", ",
           gates * hidden, "] for a state of shape ", state.shape(), ", got ", x.shape());
  if (mask.defined()) {
    NG_CHECK(mask.shape() == Shape({batch}), op, "mask must be [", batch, "], got ", mask.shape());
    autograd::primitive::check_same_device(x, mask, op);
  }
  return hidden;
}

// Where the mask is 0, the previous value; elsewhere the new one.
Tensor keep_where_masked(const Tensor& updated, const Tensor& previous, const Tensor& mask) {
  if (!mask.defined()) return updated;
  return where(ne(mask.detach(), 0.0).unsqueeze(1), updated, previous);
}

}  // namespace

Tensor gru_step(const Tensor& gx, const Tensor& gh, const Tensor& h_prev, const Tensor& mask) {
  const char* op = "gru_step";
  const std::int64_t hidden = check_step(gx, 3, h_prev, mask, op, "gx");
  check_step(gh, 3, h_prev, mask, op, "gh");
  const Tensor x = gx.contiguous().detach(), s = gh.contiguous().detach();
  const Tensor previous = h_prev.contiguous().detach();
  const Tensor m = kernel_args::mask(mask, gx.dtype());
  const std::int64_t batch = h_prev.size(0);
  Tensor h = detail::make_tensor({batch, hidden}, gx.dtype(), gx.device());
  Tensor activations = detail::make_tensor({batch, 3 * hidden}, gx.dtype(), gx.device());
  backend::TensorRef mask_ref;
  detail::backend_of(h).gru_cell_forward(detail::ref(h), detail::ref(activations), detail::ref(x),
                                         detail::ref(s), detail::ref(previous),
                                         kernel_args::optional_ref(m, mask_ref));
  if (autograd::needs_grad(gx, gh, h_prev))
    autograd::record(
        "GruStepBackward", h, {gx, gh, h_prev}, {activations, s, previous, m},
        [](const Tensor& dh, const autograd::SavedTensors& saved) {
          const Tensor upstream = dh.contiguous();
          autograd::Grads grads{empty_like(saved[1]), empty_like(saved[1]), empty_like(upstream)};
          backend::TensorRef saved_mask;
          detail::backend_of(dh).gru_cell_backward(
              detail::ref(grads[0]), detail::ref(grads[1]), detail::ref(grads[2]),
              detail::ref(upstream), detail::ref(saved[0]), detail::ref(saved[1]),
              detail::ref(saved[2]), kernel_args::optional_ref(saved[3], saved_mask));
          return grads;
        });
  return h;
}

Tensor gru_step_composed(const Tensor& gx, const Tensor& gh, const Tensor& h_prev,
                         const Tensor& mask) {
  const std::int64_t hidden = check_step(gx, 3, h_prev, mask, "gru_step", "gx");
  check_step(gh, 3, h_prev, mask, "gru_step", "gh");
  const std::vector<Tensor> x = split(gx, hidden, 1), s = split(gh, hidden, 1);
  const Tensor reset = sigmoid(x[0] + s[0]);
  const Tensor update = sigmoid(x[1] + s[1]);
  const Tensor candidate = tanh(x[2] + reset * s[2]);
  return keep_where_masked(candidate + update * (h_prev - candidate), h_prev, mask);
}

Tensor normed_gru_step(const Tensor& gx, const Tensor& gh, const Tensor& h_prev,
                       const GruStateNorms& given_norms, const Tensor& mask) {
  const char* op = "normed_gru_step";
  const GruStateNorms norms{kernel_args::for_input(given_norms.gates, gx),
                            kernel_args::for_input(given_norms.candidate, gx)};
  const std::int64_t hidden = check_step(gx, 3, h_prev, mask, op, "gx");
  check_step(gh, 3, h_prev, mask, op, "gh");
  const kernel_args::GruNorms kernel_norms = kernel_args::gru_norms(norms, hidden, gx, op);
  const std::array<Tensor, 4>& affine = kernel_norms.affine;
  const Tensor x = gx.contiguous().detach(), s = gh.contiguous().detach();
  const Tensor previous = h_prev.contiguous().detach();
  const Tensor m = kernel_args::mask(mask, gx.dtype());
  const std::int64_t batch = h_prev.size(0);
  const auto make = [&](Shape shape) {
    return detail::make_tensor(shape, gx.dtype(), gx.device());
  };
  Tensor h = make({batch, hidden});
  Tensor activations = make({batch, 3 * hidden});
  Tensor normalised = make({batch, 3 * hidden});
  Tensor statistics = detail::make_tensor({4, batch}, compute_dtype(gx.dtype()), gx.device());
  std::array<backend::TensorRef, 4> refs;
  backend::TensorRef mask_ref;
  detail::backend_of(h).normed_gru_cell_forward(
      kernel_args::with_affine(kernel_norms.params, affine, refs), detail::ref(h),
      detail::ref(activations), detail::ref(normalised), detail::ref(statistics), detail::ref(x),
      detail::ref(s), detail::ref(previous), kernel_args::optional_ref(m, mask_ref));
  const std::vector<Tensor> inputs = {gx,
                                      gh,
                                      h_prev,
                                      norms.gates.gain,
                                      norms.gates.bias,
                                      norms.candidate.gain,
                                      norms.candidate.bias};
  if (!autograd::needs_grad(inputs)) return h;
  const std::array<bool, 4> wanted = {
      norms.gates.gain.defined() && norms.gates.gain.requires_grad(),
      norms.gates.bias.defined() && norms.gates.bias.requires_grad(),
      norms.candidate.gain.defined() && norms.candidate.gain.requires_grad(),
      norms.candidate.bias.defined() && norms.candidate.bias.requires_grad()};
  autograd::record(
      "NormedGruStepBackward", h, inputs,
      {activations, normalised, statistics, s, previous, m, affine[0], affine[1], affine[2],
       affine[3]},
      [params = kernel_norms.params, wanted](const Tensor& dh,
                                             const autograd::SavedTensors& saved) {
        const Tensor upstream = dh.contiguous();
        const std::int64_t units = upstream.size(1);
        autograd::Grads grads{empty_like(saved[0]), empty_like(saved[0]), empty_like(upstream)};
        grads.resize(7);
        for (int i = 0; i < 4; ++i)
          if (wanted[i])
            grads[3 + i] = detail::make_tensor({i < 2 ? 2 * units : units}, upstream.dtype(),
                                               upstream.device());
        std::array<backend::TensorRef, 4> parameter_refs, grad_refs;
        backend::TensorRef saved_mask;
        detail::backend_of(dh).normed_gru_cell_backward(
            kernel_args::with_affine(params, std::span<const Tensor, 4>(saved.begin() + 6, 4),
                                     parameter_refs),
            detail::ref(grads[0]), detail::ref(grads[1]), detail::ref(grads[2]),
            kernel_args::affine_grads(std::span<const Tensor, 4>(grads.begin() + 3, 4), grad_refs),
            detail::ref(upstream), detail::ref(saved[0]), detail::ref(saved[1]),
            detail::ref(saved[2]), detail::ref(saved[3]), detail::ref(saved[4]),
            kernel_args::optional_ref(saved[5], saved_mask));
        return grads;
      });
  return h;
}

Tensor normed_gru_step_composed(const Tensor& gx, const Tensor& gh, const Tensor& h_prev,
                                const GruStateNorms& norms, const Tensor& mask) {
  const std::int64_t hidden = check_step(gh, 3, h_prev, mask, "normed_gru_step", "gh");
  const std::vector<Tensor> blocks = split(gh, {2 * hidden, hidden}, -1);
  const Tensor normalised =
      cat({row_norm(blocks[0], norms.gates), row_norm(blocks[1], norms.candidate)}, -1);
  return gru_step_composed(gx, normalised, h_prev, mask);
}

std::array<Tensor, 2> lstm_step(const Tensor& gx, const Tensor& gh, const Tensor& h_prev,
                                const Tensor& c_prev, const LstmStepNorms& given_norms,
                                const Tensor& mask) {
  const char* op = "lstm_step";
  const LstmStepNorms norms = kernel_args::for_input(given_norms, gx);
  const std::int64_t hidden = check_step(gx, 4, h_prev, mask, op, "gx");
  check_step(gh, 4, h_prev, mask, op, "gh");
  check_step(c_prev, 1, h_prev, mask, op, "c_prev");
  // gains and biases: the state norm's, then the cell norm's
  const kernel_args::LstmNorms checked = kernel_args::lstm_norms(norms, hidden, gx, op);
  const std::array<Tensor, 4>& affine = checked.affine;
  const Tensor x = gx.contiguous().detach(), s = gh.contiguous().detach();
  const Tensor previous_h = h_prev.contiguous().detach(), previous_c = c_prev.contiguous().detach();
  const Tensor m = kernel_args::mask(mask, gx.dtype());
  const std::int64_t batch = h_prev.size(0);
  const auto make = [&](Shape shape) {
    return detail::make_tensor(shape, gx.dtype(), gx.device());
  };
  Tensor state = make({batch, 2 * hidden});
  Tensor activations = make({batch, 4 * hidden});
  Tensor cell = make({batch, hidden});
  Tensor statistics = detail::make_tensor({4, batch}, compute_dtype(gx.dtype()), gx.device());
  std::array<backend::TensorRef, 4> refs;
  backend::TensorRef mask_ref;
  detail::backend_of(state).lstm_step_forward(
      kernel_args::with_affine(checked.params, affine, refs), detail::ref(state),
      detail::ref(activations), detail::ref(cell), detail::ref(statistics), detail::ref(x),
      detail::ref(s), detail::ref(previous_h), detail::ref(previous_c),
      kernel_args::optional_ref(m, mask_ref));
  const RowNorm none;
  const RowNorm& state_norm = norms.state ? *norms.state : none;
  const RowNorm& cell_norm = norms.cell ? *norms.cell : none;
  const std::vector<Tensor> inputs = {
      gx, gh, h_prev, c_prev, state_norm.gain, state_norm.bias, cell_norm.gain, cell_norm.bias};
  if (autograd::needs_grad(inputs)) {
    std::array<bool, 4> wanted{};
    for (std::size_t i = 0; i < 4; ++i)
      wanted[i] = inputs[4 + i].defined() && inputs[4 + i].requires_grad();
    autograd::record(
        "LstmStepBackward", state, inputs,
        {state.detach(), activations, cell, statistics, s, previous_c, m, affine[0], affine[1],
         affine[2], affine[3]},
        [params = checked.params, wanted](const Tensor& dstate,
                                          const autograd::SavedTensors& saved) {
          const Tensor upstream = dstate.contiguous();
          const std::int64_t units = saved[2].size(1);
          autograd::Grads grads{empty_like(saved[1]), empty_like(saved[1]), empty_like(saved[2]),
                                empty_like(saved[2])};
          grads.resize(8);
          for (std::size_t i = 0; i < 4; ++i)
            if (wanted[i])
              grads[4 + i] = detail::make_tensor({i < 2 ? 4 * units : units}, upstream.dtype(),
                                                 upstream.device());
          std::array<backend::TensorRef, 4> parameter_refs, grad_refs;
          backend::TensorRef saved_mask;
          detail::backend_of(dstate).lstm_step_backward(
              kernel_args::with_affine(params, std::span<const Tensor, 4>(saved.begin() + 7, 4),
                                       parameter_refs),
              detail::ref(grads[0]), detail::ref(grads[1]), detail::ref(grads[2]),
              detail::ref(grads[3]),
              kernel_args::lstm_affine_grads(std::span<const Tensor, 4>(grads.begin() + 4, 4),
                                             grad_refs),
              detail::ref(upstream), detail::ref(saved[0]), detail::ref(saved[1]),
              detail::ref(saved[2]), detail::ref(saved[3]), detail::ref(saved[4]),
              detail::ref(saved[5]), kernel_args::optional_ref(saved[6], saved_mask));
          return grads;
        });
  }
  const std::vector<Tensor> halves = split(state, hidden, 1);
  return {halves[0], halves[1]};
}

std::array<Tensor, 2> lstm_step_composed(const Tensor& gx, const Tensor& gh, const Tensor& h_prev,
                                         const Tensor& c_prev, const LstmStepNorms& norms,
                                         const Tensor& mask) {
  const std::int64_t hidden = check_step(gx, 4, h_prev, mask, "lstm_step", "gx");
  const Tensor gates = gx + (norms.state ? row_norm(gh, *norms.state) : gh);
  const Tensor c = lstm_cell_state_composed(gates, c_prev, mask);
  const Tensor output_gate = sigmoid(gates.narrow(1, 3 * hidden, hidden));
  const Tensor h = output_gate * tanh(norms.cell ? row_norm(c, *norms.cell) : c);
  return {keep_where_masked(h, h_prev, mask), c};
}

Tensor lstm_cell_state(const Tensor& gates, const Tensor& c_prev, const Tensor& mask) {
  const char* op = "lstm_cell_state";
  const std::int64_t hidden = check_step(gates, 4, c_prev, mask, op, "gates");
  const Tensor pre = gates.contiguous().detach(), previous = c_prev.contiguous().detach();
  const Tensor m = kernel_args::mask(mask, gates.dtype());
  const std::int64_t batch = c_prev.size(0);
  Tensor c = detail::make_tensor({batch, hidden}, gates.dtype(), gates.device());
  Tensor activations = detail::make_tensor({batch, 3 * hidden}, gates.dtype(), gates.device());
  backend::TensorRef mask_ref;
  detail::backend_of(c).lstm_cell_forward(detail::ref(c), detail::ref(activations),
                                          detail::ref(pre), detail::ref(previous),
                                          kernel_args::optional_ref(m, mask_ref));
  if (autograd::needs_grad(gates, c_prev))
    autograd::record(
        "LstmCellStateBackward", c, {gates, c_prev}, {activations, previous, m},
        [](const Tensor& dc, const autograd::SavedTensors& saved) {
          const Tensor upstream = dc.contiguous();
          const std::int64_t rows = upstream.size(0), units = upstream.size(1);
          autograd::Grads grads{
              detail::make_tensor({rows, 4 * units}, upstream.dtype(), upstream.device()),
              empty_like(upstream)};
          backend::TensorRef saved_mask;
          detail::backend_of(dc).lstm_cell_backward(
              detail::ref(grads[0]), detail::ref(grads[1]), detail::ref(upstream),
              detail::ref(saved[0]), detail::ref(saved[1]),
              kernel_args::optional_ref(saved[2], saved_mask));
          return grads;
        });
  return c;
}

Tensor lstm_cell_state_composed(const Tensor& gates, const Tensor& c_prev, const Tensor& mask) {
  const std::int64_t hidden = check_step(gates, 4, c_prev, mask, "lstm_cell_state", "gates");
  const std::vector<Tensor> pre = split(gates, hidden, 1);
  const Tensor c = sigmoid(pre[1]) * c_prev + sigmoid(pre[0]) * tanh(pre[2]);
  return keep_where_masked(c, c_prev, mask);
}

}  // namespace normgrad
