#pragma once
// The names of the elementwise ops and the reductions, for the backends' error messages and
// the profiler's records.

#include "backends/backend.h"

namespace normgrad::backend {

inline const char* unary_name(UnaryOp op) {
  switch (op) {
    case UnaryOp::Neg:
      return "neg";
    case UnaryOp::Abs:
      return "abs";
    case UnaryOp::Exp:
      return "exp";
    case UnaryOp::Log:
      return "log";
    case UnaryOp::Sqrt:
      return "sqrt";
    case UnaryOp::Rsqrt:
      return "rsqrt";
    case UnaryOp::Tanh:
      return "tanh";
    case UnaryOp::Sigmoid:
      return "sigmoid";
    case UnaryOp::Relu:
      return "relu";
    case UnaryOp::Gelu:
      return "gelu";
    case UnaryOp::Sign:
      return "sign";
    case UnaryOp::Square:
      return "square";
    case UnaryOp::LeakyRelu:
      return "leaky_relu";
    case UnaryOp::Clamp:
      return "clamp";
    case UnaryOp::PowScalar:
      return "pow_scalar";
    case UnaryOp::AddScalar:
      return "add_scalar";
    case UnaryOp::MulScalar:
      return "mul_scalar";
    case UnaryOp::RsubScalar:
      return "rsub_scalar";
    case UnaryOp::RdivScalar:
      return "rdiv_scalar";
  }
  return "?";
}

inline const char* binary_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add:
      return "add";
    case BinaryOp::Sub:
      return "sub";
    case BinaryOp::Mul:
      return "mul";
    case BinaryOp::Div:
      return "div";
    case BinaryOp::Pow:
      return "pow";
    case BinaryOp::Maximum:
      return "maximum";
    case BinaryOp::Minimum:
      return "minimum";
    case BinaryOp::Eq:
      return "eq";
    case BinaryOp::Ne:
      return "ne";
    case BinaryOp::Lt:
      return "lt";
    case BinaryOp::Le:
      return "le";
    case BinaryOp::Gt:
      return "gt";
    case BinaryOp::Ge:
      return "ge";
    case BinaryOp::TanhGrad:
      return "tanh_grad";
    case BinaryOp::SigmoidGrad:
      return "sigmoid_grad";
    case BinaryOp::ReluGrad:
      return "relu_grad";
    case BinaryOp::GeluGrad:
      return "gelu_grad";
    case BinaryOp::LeakyReluGrad:
      return "leaky_relu_grad";
  }
  return "?";
}

inline const char* reduce_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "sum";
    case ReduceOp::Max:
      return "max";
    case ReduceOp::Min:
      return "min";
    case ReduceOp::ArgMax:
      return "argmax";
    case ReduceOp::ArgMin:
      return "argmin";
  }
  return "?";
}

}  // namespace normgrad::backend
