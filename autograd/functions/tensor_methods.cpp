// The math members of Tensor: each forwards to the free function of the same name in
// autograd/ops.h, where the op and its backward are defined.

#include "autograd/ops.h"

namespace normgrad {

Tensor Tensor::sum() const { return normgrad::sum(*this); }
Tensor Tensor::sum(const std::vector<std::int64_t>& dims, bool keepdim) const {
  return normgrad::sum(*this, dims, keepdim);
}
Tensor Tensor::mean() const { return normgrad::mean(*this); }
Tensor Tensor::mean(const std::vector<std::int64_t>& dims, bool keepdim) const {
  return normgrad::mean(*this, dims, keepdim);
}
Tensor Tensor::max() const { return normgrad::max(*this); }
Tensor Tensor::max(std::int64_t dim, bool keepdim) const {
  return normgrad::max(*this, dim, keepdim);
}
Tensor Tensor::argmax(std::int64_t dim, bool keepdim) const {
  return normgrad::argmax(*this, dim, keepdim);
}
Tensor Tensor::var(const std::vector<std::int64_t>& dims, bool keepdim, bool unbiased) const {
  return normgrad::var(*this, dims, keepdim, unbiased);
}
Tensor Tensor::exp() const { return normgrad::exp(*this); }
Tensor Tensor::log() const { return normgrad::log(*this); }
Tensor Tensor::sqrt() const { return normgrad::sqrt(*this); }
Tensor Tensor::rsqrt() const { return normgrad::rsqrt(*this); }
Tensor Tensor::abs() const { return normgrad::abs(*this); }
Tensor Tensor::tanh() const { return normgrad::tanh(*this); }
Tensor Tensor::sigmoid() const { return normgrad::sigmoid(*this); }
Tensor Tensor::relu() const { return normgrad::relu(*this); }
Tensor Tensor::pow(double exponent) const { return normgrad::pow(*this, exponent); }
Tensor Tensor::square() const { return normgrad::square(*this); }
Tensor Tensor::matmul(const Tensor& other) const { return normgrad::matmul(*this, other); }
Tensor Tensor::softmax(std::int64_t dim) const { return normgrad::softmax(*this, dim); }
Tensor Tensor::log_softmax(std::int64_t dim) const { return normgrad::log_softmax(*this, dim); }

}  // namespace normgrad
