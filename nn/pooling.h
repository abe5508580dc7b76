#pragma once
// Pooling layers and Flatten: stateless modules around the ops of autograd/ops.h, so that a
// model can list them beside its convolutions. The paper's CIFAR model (its Appendix A.4) uses
// MaxPool2d(2) (2x2 windows, stride 2) and ends in GlobalAvgPool2d, [N, C, H, W] -> [N, C].

#include <cstdint>
#include <optional>
#include <string>

#include "autograd/ops.h"
#include "nn/layer.h"

namespace normgrad::nn {

// The largest value of each window; stride defaults to the kernel size.
class MaxPool2d final : public Layer {
 public:
  explicit MaxPool2d(Size2d kernel, std::optional<Size2d> stride = std::nullopt,
                     Size2d padding = 0);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "MaxPool2d"; }

 private:
  Size2d kernel_;
  std::optional<Size2d> stride_;
  Size2d padding_;
};

// The mean of each window, dividing by kh kw even where the window covers padding (PyTorch's
// default count_include_pad = true).
class AvgPool2d final : public Layer {
 public:
  explicit AvgPool2d(Size2d kernel, std::optional<Size2d> stride = std::nullopt,
                     Size2d padding = 0);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "AvgPool2d"; }

 private:
  Size2d kernel_;
  std::optional<Size2d> stride_;
  Size2d padding_;
};

// The mean over H and W: [N, C, H, W] -> [N, C].
class GlobalAvgPool2d final : public Layer {
 public:
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "GlobalAvgPool2d"; }
};

// Merges dims start_dim..end_dim into one (by default all but the batch dim), as a view when
// the strides allow.
class Flatten final : public Layer {
 public:
  explicit Flatten(std::int64_t start_dim = 1, std::int64_t end_dim = -1);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Flatten"; }

 private:
  std::int64_t start_dim_, end_dim_;
};

}  // namespace normgrad::nn
