#include "nn/pooling.h"

#include "profiler/recorder.h"

namespace normgrad::nn {

MaxPool2d::MaxPool2d(Size2d kernel, std::optional<Size2d> stride, Size2d padding)
    : kernel_(kernel), stride_(stride), padding_(padding) {}

Tensor MaxPool2d::forward(const Tensor& x) {
  const profiler::ModuleSpan span(this, "MaxPool2d");
  return max_pool2d(x, kernel_, stride_, padding_);
}

AvgPool2d::AvgPool2d(Size2d kernel, std::optional<Size2d> stride, Size2d padding)
    : kernel_(kernel), stride_(stride), padding_(padding) {}

Tensor AvgPool2d::forward(const Tensor& x) {
  const profiler::ModuleSpan span(this, "AvgPool2d");
  return avg_pool2d(x, kernel_, stride_, padding_);
}

Tensor GlobalAvgPool2d::forward(const Tensor& x) {
  const profiler::ModuleSpan span(this, "GlobalAvgPool2d");
  return global_avg_pool2d(x);
}

Flatten::Flatten(std::int64_t start_dim, std::int64_t end_dim)
    : start_dim_(start_dim), end_dim_(end_dim) {}

Tensor Flatten::forward(const Tensor& x) {
  const profiler::ModuleSpan span(this, "Flatten");
  return x.flatten(start_dim_, end_dim_);
}

}  // namespace normgrad::nn
