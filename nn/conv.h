#pragma once
// Conv2d: a 2-d convolution layer over [N, C, H, W] input, as in libtorch (see conv2d in
// autograd/ops.h for the arithmetic and the output size).
//
// Initialisation follows PyTorch's default: with fan_in = C kh kw, the weight is
// kaiming_uniform_ with negative slope sqrt(5), which works out to U(-1/sqrt(fan_in),
// 1/sqrt(fan_in)), and the bias is drawn from the same interval.
//
// The paper's CIFAR model (its Appendix A.4) uses 3x3 convolutions with padding 1 and 0 and 1x1
// ("network in network") convolutions:
//   nn::Conv2d conv(96, 192, 3, {.padding = 1});
//   nn::Conv2d nin(192, 192, 1);

#include <cstdint>
#include <string>

#include "autograd/ops.h"
#include "core/generator.h"
#include "nn/layer.h"

namespace normgrad::nn {

struct Conv2dOptions {
  Size2d stride = 1;
  Size2d padding = 0;
  Size2d dilation = 1;
  bool bias = true;
  DType dtype = DType::Float32;
};

class Conv2d final : public Layer {
 public:
  Tensor weight;  // [out_channels, in_channels, kh, kw]
  Tensor bias;    // [out_channels]; undefined without options.bias

  Conv2d(std::int64_t in_channels, std::int64_t out_channels, Size2d kernel,
         Conv2dOptions options = {}, Generator& generator = default_generator());

  // [N, in_channels, H, W] -> [N, out_channels, OH, OW].
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Conv2d"; }
  const Conv2dOptions& options() const { return options_; }

 private:
  Conv2dOptions options_;
};

}  // namespace normgrad::nn
