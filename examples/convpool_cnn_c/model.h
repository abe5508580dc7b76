#pragma once
// ConvPool-CNN-C as the WeightNorm paper's CIFAR-10 code builds it, and the RMSNorm paper
// follows (its Appendix A.4):
//
//   input [N, C, 32, 32] -> Gaussian noise 0.15 (training only)
//   3 x (3x3 conv 96, padding 1)  -> 2x2 max-pool -> dropout 0.5
//   3 x (3x3 conv 192, padding 1) -> 2x2 max-pool -> dropout 0.5
//   3x3 conv 192 without padding (8x8 -> 6x6) -> 2 x (1x1 conv 192, "network in network")
//   global average pool -> dense 192 -> 10 -> logits
//
// Every convolution and the dense layer is a NormalizedLayer: its product, then the
// normaliser, then (for the convolutions) leaky ReLU with slope 0.1. The normaliser acts as
// the paper's code has it:
//   none        the code's baseline: y = g (W x) + b, with g a fixed per-channel scale and b a
//               trained bias, both set by data-dependent initialisation; W Glorot-uniform
//   weightnorm  W = g v / ||v|| per output channel (nn::WeightNorm), v ~ N(0, 0.05^2), + b;
//               g and b set by data-dependent initialisation
//   batchnorm   BatchNorm over (N, H, W) per channel, eps 1e-6, running averages with momentum
//               0.9 in the code's convention (0.1 in PyTorch's); W ~ N(0, 0.05^2)
//   layernorm, rmsnorm, prmsnorm:p, l2norm
//               over each (sample, channel) map's H x W positions, gain and bias per channel;
//               over the 10 outputs for the dense layer; W Glorot-uniform
// Convolutions have no bias of their own: the normaliser's bias takes its place.
//
// Data-dependent initialisation (none and weightnorm): one forward pass over the first
// training images (500 in the paper), in training mode; each layer in turn rescales g and sets
// b so that its outputs on that batch have mean 0 and standard deviation 1 per channel, and
// hands those outputs on.

#include <normgrad/normgrad.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/classification.h"

namespace convpool_cnn_c {

struct ModelConfig {
  std::string norm = "rmsnorm";     // a spec for parse_model_norm
  std::int64_t input_channels = 3;  // 3 for CIFAR-10, 1 for Fashion-MNIST
  double width = 1.0;               // scales the channel counts 96 and 192
  double input_noise = 0.15;        // the standard deviation of the training noise
  double dropout = 0.5;
  std::uint64_t seed = 1;  // the initial weights, and the noise and dropout draws
  // "bfloat16": mixed precision (common/precision.h). The images are rounded to bfloat16 and
  // every layer computes on bfloat16 activations, in float32; the data-dependent
  // initialisation runs in float32.
  std::string precision = "float32";
};

// The channel count `channels` scaled by `width`, rounded; an Error if it leaves none.
std::int64_t scaled_channels(std::int64_t channels, double width);

// The spec as this model uses it: one of none, weightnorm, batchnorm, layernorm, rmsnorm,
// prmsnorm[:p], l2norm, with options. A spec that does not say bias=on|off gets a bias, since
// the convolutions have none of their own; BatchNorm gets eps 1e-6 unless the spec says
// another. A bad spec throws normgrad::Error.
normgrad::nn::NormSpec parse_model_norm(std::string_view spec);

// A convolution (or the dense layer: kernel 0) and its normaliser, without the nonlinearity.
class NormalizedLayer : public normgrad::nn::Module {
 public:
  NormalizedLayer(std::int64_t in, std::int64_t out, std::int64_t kernel, std::int64_t padding,
                  const normgrad::nn::NormSpec& norm, normgrad::Generator& generator);
  std::string type_name() const override { return "NormalizedLayer"; }

  normgrad::Tensor forward(const normgrad::Tensor& x) const;
  // Data-dependent initialisation on one batch (none and weightnorm; the others are left as
  // they are): sets g and b, and returns the outputs forward() now gives for x.
  normgrad::Tensor initialise_from_data(const normgrad::Tensor& x);

  bool is_convolution() const { return kernel_ > 0; }

 private:
  // W x (+ b when given), with W = weight().
  normgrad::Tensor product(const normgrad::Tensor& x,
                           const normgrad::Tensor& bias = normgrad::Tensor()) const;
  // The weight the product uses: WeightNorm's g v / |v|; for none, the weight with the fixed
  // scale g of its output channel folded in (g (W x) = (g W) x, the same function and
  // gradients, with no pass over the outputs to scale them); else the weight.
  normgrad::Tensor weight() const;

  normgrad::nn::NormSpec norm_;
  std::int64_t kernel_ = 0, padding_ = 0;
  normgrad::Tensor weight_;  // [out, in, k, k] or [out, in]; undefined with weightnorm
  std::shared_ptr<normgrad::nn::WeightNorm> weight_norm_;
  normgrad::Tensor scale_;  // none: the fixed per-channel scale g (a buffer)
  normgrad::Tensor bias_;   // none and weightnorm: b
  std::shared_ptr<normgrad::nn::Norm> output_norm_;
};

class ConvPoolCnnC : public normgrad::nn::Module {
 public:
  explicit ConvPoolCnnC(const ModelConfig& config);
  std::string type_name() const override { return "ConvPoolCnnC"; }

  // Images [N, input_channels, 32, 32] -> logits [N, 10], in the activations' dtype
  // (bfloat16 in mixed precision). Noise and dropout in training mode only.
  normgrad::Tensor forward(const normgrad::Tensor& images);

  // The data-dependent initialisation above, on `images` (no gradient is recorded). Does
  // nothing for the normalisers that need none.
  void initialise_from_data(const normgrad::Tensor& images);
  bool needs_data_initialisation() const;

  const ModelConfig& config() const { return config_; }
  // The draws of the training noise and dropout: its offset goes into a checkpoint.
  normgrad::Generator& noise_generator() { return noise_generator_; }

 private:
  normgrad::Tensor run(const normgrad::Tensor& images, bool initialise);

  ModelConfig config_;
  normgrad::DType activation_dtype_;
  normgrad::nn::NormSpec norm_;
  normgrad::Generator noise_generator_;
  std::vector<std::shared_ptr<NormalizedLayer>> layers_;  // 9 convolutions, then the dense
};

// The values of the model's parameters, all told.
using examples::count_parameters;

}  // namespace convpool_cnn_c
