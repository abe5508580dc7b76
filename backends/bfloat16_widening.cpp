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

GruStateNorms Float32Copies::input(GruStateNorms norms) {
  norms.gates_gain = input(norms.gates_gain);
  norms.gates_bias = input(norms.gates_bias);
  norms.candidate_gain = input(norms.candidate_gain);
  norms.candidate_bias = input(norms.candidate_bias);
  return norms;
}

LstmStepNorms Float32Copies::input(LstmStepNorms norms) {
  norms.state_gain = input(norms.state_gain);
  norms.state_bias = input(norms.state_bias);
  norms.cell_gain = input(norms.cell_gain);
  norms.cell_bias = input(norms.cell_bias);
  return norms;
}

GruStateNormGrads Float32Copies::output(const GruStateNormGrads& grads) {
  return {output(grads.gates_gain), output(grads.gates_bias), output(grads.candidate_gain),
          output(grads.candidate_bias)};
}

LstmStepNormGrads Float32Copies::output(const LstmStepNormGrads& grads) {
  return {output(grads.state_gain), output(grads.state_bias), output(grads.cell_gain),
          output(grads.cell_bias)};
}

void Float32Copies::finish() {
  for (const Copy& copy : copies_) {
    if (!copy.written || copy.bytes == 0) continue;
    TensorRef source = copy.working;
    source.shape = distinct_values(copy.original).shape;
    backend_.copy(distinct_values(copy.original), source);
  }
}

}  // namespace normgrad::backend
