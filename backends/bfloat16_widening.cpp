// Float32 working copies for bfloat16 operands (bfloat16_widening.h).

#include "backends/bfloat16_widening.h"

#include <cstdint>

namespace normgrad::backend {

namespace {

// The operand with its broadcast dims cut to size 1: the values a copy must hold.
TensorRef distinct_values(const TensorRef& operand) {
  TensorRef view = operand;
  for (std::size_t d = 0; d < view.shape.size(); ++d)
    if (view.strides[d] == 0) view.shape[d] = 1;
  return view;
}

}  // namespace

bool any_bfloat16(std::initializer_list<const TensorRef*> operands) {
  for (const TensorRef* operand : operands)
    if (operand != nullptr && operand->dtype == DType::BFloat16) return true;
  return false;
}

Float32Copies::~Float32Copies() {
  for (Copy& copy : copies_)
    if (copy.bytes > 0) backend_.deallocate(copy.working.data, copy.bytes);
}

const TensorRef& Float32Copies::add(const TensorRef& operand, bool read, bool written) {
  if (operand.dtype != DType::BFloat16) return operand;
  Copy copy;
  copy.original = operand;
  copy.written = written;
  const TensorRef compact = distinct_values(operand);
  copy.working.dtype = DType::Float32;
  copy.working.shape = operand.shape;
  copy.working.strides.assign(operand.shape.size(), 0);
  std::int64_t stride = 1;
  for (std::size_t d = operand.shape.size(); d-- > 0;) {
    if (operand.strides[d] == 0 && operand.shape[d] != 1) continue;  // broadcast: stays 0
    copy.working.strides[d] = stride;
    stride *= compact.shape[d];
  }
  copy.bytes = static_cast<std::size_t>(compact.numel()) * sizeof(float);
  if (copy.bytes > 0) copy.working.data = backend_.allocate(copy.bytes);
  copies_.push_back(copy);
  Copy& kept = copies_.back();
  if (read && kept.bytes > 0) {
    backend_.copy(distinct_values(kept.working), compact);
  }
  return kept.working;
}

const TensorRef& Float32Copies::input(const TensorRef& operand) {
  return add(operand, true, false);
}
const TensorRef& Float32Copies::output(const TensorRef& operand) {
  return add(operand, false, true);
}
const TensorRef& Float32Copies::update(const TensorRef& operand) {
  return add(operand, true, true);
}
const TensorRef* Float32Copies::input(const TensorRef* operand) {
  return operand == nullptr ? nullptr : &input(*operand);
}
const TensorRef* Float32Copies::output(const TensorRef* operand) {
  return operand == nullptr ? nullptr : &output(*operand);
}

void Float32Copies::finish() {
  for (const Copy& copy : copies_) {
    if (!copy.written || copy.bytes == 0) continue;
    TensorRef source = copy.working;
    source.shape = distinct_values(copy.original).shape;
    backend_.copy(distinct_values(copy.original), source);
  }
}

namespace widened {

void index_add(Backend& backend, const TensorRef& out, int dim, const TensorRef& index,
               const TensorRef& src) {
  Float32Copies copies(backend);
  backend.index_add(copies.update(out), dim, index, copies.input(src));
  copies.finish();
}

void scatter_add(Backend& backend, const TensorRef& out, int dim, const TensorRef& index,
                 const TensorRef& src) {
  Float32Copies copies(backend);
  backend.scatter_add(copies.update(out), dim, index, copies.input(src));
  copies.finish();
}

void matmul(Backend& backend, const TensorRef& out, const TensorRef& a, const TensorRef& b,
            bool accumulate) {
  Float32Copies copies(backend);
  const TensorRef& out_copy = accumulate ? copies.update(out) : copies.output(out);
  backend.matmul(out_copy, copies.input(a), copies.input(b), accumulate);
  copies.finish();
}

namespace {

GruStateNorms float32_norms(Float32Copies& copies, GruStateNorms norms) {
  norms.gates_gain = copies.input(norms.gates_gain);
  norms.gates_bias = copies.input(norms.gates_bias);
  norms.candidate_gain = copies.input(norms.candidate_gain);
  norms.candidate_bias = copies.input(norms.candidate_bias);
  return norms;
}

GruStateNormGrads float32_grads(Float32Copies& copies, const GruStateNormGrads& grads) {
  return {copies.output(grads.gates_gain), copies.output(grads.gates_bias),
          copies.output(grads.candidate_gain), copies.output(grads.candidate_bias)};
}

LstmStepNorms float32_norms(Float32Copies& copies, LstmStepNorms norms) {
  norms.state_gain = copies.input(norms.state_gain);
  norms.state_bias = copies.input(norms.state_bias);
  norms.cell_gain = copies.input(norms.cell_gain);
  norms.cell_bias = copies.input(norms.cell_bias);
  return norms;
}

LstmStepNormGrads float32_grads(Float32Copies& copies, const LstmStepNormGrads& grads) {
  return {copies.output(grads.state_gain), copies.output(grads.state_bias),
          copies.output(grads.cell_gain), copies.output(grads.cell_bias)};
}

}  // namespace

void gru_cell_forward(Backend& backend, const TensorRef& h, const TensorRef& activations,
                      const TensorRef& gx, const TensorRef& gh, const TensorRef& h_prev,
                      const TensorRef* mask) {
  Float32Copies copies(backend);
  backend.gru_cell_forward(copies.output(h), copies.output(activations), copies.input(gx),
                           copies.input(gh), copies.input(h_prev), copies.input(mask));
  copies.finish();
}

void gru_cell_backward(Backend& backend, const TensorRef& dgx, const TensorRef& dgh,
                       const TensorRef& dh_prev, const TensorRef& dh, const TensorRef& activations,
                       const TensorRef& gh, const TensorRef& h_prev, const TensorRef* mask) {
  Float32Copies copies(backend);
  backend.gru_cell_backward(copies.output(dgx), copies.output(dgh), copies.output(dh_prev),
                            copies.input(dh), copies.input(activations), copies.input(gh),
                            copies.input(h_prev), copies.input(mask));
  copies.finish();
}

void normed_gru_cell_forward(Backend& backend, const GruStateNorms& norms, const TensorRef& h,
                             const TensorRef& activations, const TensorRef& normalised,
                             const TensorRef& statistics, const TensorRef& gx, const TensorRef& gh,
                             const TensorRef& h_prev, const TensorRef* mask) {
  Float32Copies copies(backend);
  backend.normed_gru_cell_forward(float32_norms(copies, norms), copies.output(h),
                                  copies.output(activations), copies.output(normalised),
                                  copies.output(statistics), copies.input(gx), copies.input(gh),
                                  copies.input(h_prev), copies.input(mask));
  copies.finish();
}

void normed_gru_cell_backward(Backend& backend, const GruStateNorms& norms, const TensorRef& dgx,
                              const TensorRef& dgh, const TensorRef& dh_prev,
                              const GruStateNormGrads& affine, const TensorRef& dh,
                              const TensorRef& activations, const TensorRef& normalised,
                              const TensorRef& statistics, const TensorRef& gh,
                              const TensorRef& h_prev, const TensorRef* mask) {
  Float32Copies copies(backend);
  backend.normed_gru_cell_backward(
      float32_norms(copies, norms), copies.output(dgx), copies.output(dgh), copies.output(dh_prev),
      float32_grads(copies, affine), copies.input(dh), copies.input(activations),
      copies.input(normalised), copies.input(statistics), copies.input(gh), copies.input(h_prev),
      copies.input(mask));
  copies.finish();
}

void lstm_cell_forward(Backend& backend, const TensorRef& c, const TensorRef& activations,
                       const TensorRef& gates, const TensorRef& c_prev, const TensorRef* mask) {
  Float32Copies copies(backend);
  backend.lstm_cell_forward(copies.output(c), copies.output(activations), copies.input(gates),
                            copies.input(c_prev), copies.input(mask));
  copies.finish();
}

void lstm_cell_backward(Backend& backend, const TensorRef& dgates, const TensorRef& dc_prev,
                        const TensorRef& dc, const TensorRef& activations, const TensorRef& c_prev,
                        const TensorRef* mask) {
  Float32Copies copies(backend);
  backend.lstm_cell_backward(copies.output(dgates), copies.output(dc_prev), copies.input(dc),
                             copies.input(activations), copies.input(c_prev), copies.input(mask));
  copies.finish();
}

void lstm_step_forward(Backend& backend, const LstmStepNorms& norms, const TensorRef& state,
                       const TensorRef& activations, const TensorRef& cell,
                       const TensorRef& statistics, const TensorRef& gx, const TensorRef& gh,
                       const TensorRef& h_prev, const TensorRef& c_prev, const TensorRef* mask) {
  Float32Copies copies(backend);
  backend.lstm_step_forward(float32_norms(copies, norms), copies.output(state),
                            copies.output(activations), copies.output(cell),
                            copies.output(statistics), copies.input(gx), copies.input(gh),
                            copies.input(h_prev), copies.input(c_prev), copies.input(mask));
  copies.finish();
}

void lstm_step_backward(Backend& backend, const LstmStepNorms& norms, const TensorRef& dgx,
                        const TensorRef& dgh, const TensorRef& dh_prev, const TensorRef& dc_prev,
                        const LstmStepNormGrads& affine, const TensorRef& dstate,
                        const TensorRef& state, const TensorRef& activations, const TensorRef& cell,
                        const TensorRef& statistics, const TensorRef& gh, const TensorRef& c_prev,
                        const TensorRef* mask) {
  Float32Copies copies(backend);
  backend.lstm_step_backward(
      float32_norms(copies, norms), copies.output(dgx), copies.output(dgh), copies.output(dh_prev),
      copies.output(dc_prev), float32_grads(copies, affine), copies.input(dstate),
      copies.input(state), copies.input(activations), copies.input(cell), copies.input(statistics),
      copies.input(gh), copies.input(c_prev), copies.input(mask));
  copies.finish();
}

void im2col(Backend& backend, const TensorRef& columns, const TensorRef& image,
            const Window2d& window) {
  Float32Copies copies(backend);
  backend.im2col(copies.output(columns), copies.input(image), window);
  copies.finish();
}

void col2im(Backend& backend, const TensorRef& image, const TensorRef& columns,
            const Window2d& window) {
  Float32Copies copies(backend);
  backend.col2im(copies.output(image), copies.input(columns), window);
  copies.finish();
}

void conv2d(Backend& backend, const TensorRef& y, const TensorRef& x, const TensorRef& weight,
            const TensorRef* bias, const Window2d& window) {
  Float32Copies copies(backend);
  backend.conv2d(copies.output(y), copies.input(x), copies.input(weight), copies.input(bias),
                 window);
  copies.finish();
}

void conv2d_weight_gradient(Backend& backend, const TensorRef& dw, const TensorRef& x,
                            const TensorRef& dy, const Window2d& window) {
  Float32Copies copies(backend);
  backend.conv2d_weight_gradient(copies.output(dw), copies.input(x), copies.input(dy), window);
  copies.finish();
}

void max_pool2d(Backend& backend, const TensorRef& out, const TensorRef& indices,
                const TensorRef& in, const Window2d& window) {
  Float32Copies copies(backend);
  backend.max_pool2d(copies.output(out), indices, copies.input(in), window);
  copies.finish();
}

void max_pool2d_backward(Backend& backend, const TensorRef& dx, const TensorRef& dy,
                         const TensorRef& indices) {
  Float32Copies copies(backend);
  backend.max_pool2d_backward(copies.output(dx), copies.input(dy), indices);
  copies.finish();
}

void avg_pool2d(Backend& backend, const TensorRef& out, const TensorRef& in,
                const Window2d& window) {
  Float32Copies copies(backend);
  backend.avg_pool2d(copies.output(out), copies.input(in), window);
  copies.finish();
}

void avg_pool2d_backward(Backend& backend, const TensorRef& dx, const TensorRef& dy,
                         const Window2d& window) {
  Float32Copies copies(backend);
  backend.avg_pool2d_backward(copies.output(dx), copies.input(dy), window);
  copies.finish();
}

void batch_norm_statistics(Backend& backend, const TensorRef& mean, const TensorRef& variance,
                           const TensorRef& rstd, const TensorRef& x, double eps) {
  Float32Copies copies(backend);
  backend.batch_norm_statistics(mean, variance, rstd, copies.input(x), eps);
  copies.finish();  // nothing to round back: the statistics are float64
}

void batch_norm_forward(Backend& backend, const TensorRef& y, const TensorRef& x,
                        const TensorRef& mean, const TensorRef& rstd, const TensorRef* gain,
                        const TensorRef* bias) {
  Float32Copies copies(backend);
  backend.batch_norm_forward(copies.output(y), copies.input(x), mean, rstd, copies.input(gain),
                             copies.input(bias));
  copies.finish();
}

void batch_norm_backward(Backend& backend, const TensorRef& dx, const TensorRef* dgain,
                         const TensorRef* dbias, const TensorRef& dy, const TensorRef& x,
                         const TensorRef& mean, const TensorRef& rstd, const TensorRef* gain,
                         bool batch_statistics) {
  Float32Copies copies(backend);
  backend.batch_norm_backward(copies.output(dx), copies.output(dgain), copies.output(dbias),
                              copies.input(dy), copies.input(x), mean, rstd, copies.input(gain),
                              batch_statistics);
  copies.finish();
}

}  // namespace widened

}  // namespace normgrad::backend
