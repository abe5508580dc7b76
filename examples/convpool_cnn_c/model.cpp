#include "model.h"

#include <cmath>

#include "common/precision.h"

namespace convpool_cnn_c {

namespace ng = normgrad;
using ng::Tensor;
using ng::nn::NormKind;

namespace {

constexpr double leaky_slope = 0.1;
constexpr std::int64_t classes = 10;
// The smallest input side the layers take: two pools, then a 3x3 convolution without padding.
constexpr std::int64_t min_side = 12;

// Values [out] shaped to broadcast against a layer's outputs: [1, out, 1, 1] or [out].
Tensor as_channels(const Tensor& values, bool convolution) {
  return convolution ? values.reshape({1, values.numel(), 1, 1}) : values;
}

}  // namespace

std::int64_t scaled_channels(std::int64_t channels, double width) {
  NG_CHECK(std::isfinite(width) && width > 0, "convpool_cnn_c", "--width must be positive, got ",
           width);
  const auto scaled =
      static_cast<std::int64_t>(std::llround(static_cast<double>(channels) * width));
  NG_CHECK(scaled >= 1, "convpool_cnn_c", "--width ", width, " leaves the layers of ", channels,
           " channels with ", scaled, "; use a width of at least ",
           0.5 / static_cast<double>(channels));
  return scaled;
}

ng::nn::NormSpec parse_model_norm(std::string_view text) {
  ng::nn::NormSpec spec = ng::nn::NormSpec::parse(text);
  if (!spec.bias) spec.bias = true;
  if (spec.kind == NormKind::BatchNorm && !spec.eps) spec.eps = 1e-6;
  return spec;
}

NormalizedLayer::NormalizedLayer(std::int64_t in, std::int64_t out, std::int64_t kernel,
                                 std::int64_t padding, const ng::nn::NormSpec& norm,
                                 ng::Generator& generator)
    : norm_(norm), kernel_(kernel), padding_(padding) {
  const ng::Shape shape = kernel > 0 ? ng::Shape{out, in, kernel, kernel} : ng::Shape{out, in};
  Tensor weight = ng::empty(shape);
  // The code draws N(0, 0.05^2) for the layers whose scale is learned separately (WeightNorm's
  // v, and below BatchNorm); Lasagne's default, Glorot-uniform, elsewhere.
  if (norm.kind == NormKind::WeightNorm || norm.kind == NormKind::BatchNorm)
    ng::nn::init::normal_(weight, 0.0, 0.05, generator);
  else
    ng::nn::init::xavier_uniform_(weight, 1.0, generator);

  const ng::nn::NormLayout layout =
      kernel > 0 ? ng::nn::NormLayout::ChannelMaps : ng::nn::NormLayout::Features;
  switch (norm.kind) {
    case NormKind::None:
      weight_ = register_parameter("weight", weight);
      scale_ = register_buffer("scale", ng::ones({out}));
      bias_ = register_parameter("bias", ng::zeros({out}));
      break;
    case NormKind::WeightNorm:
      weight_norm_ = register_module("weight_norm", std::make_shared<ng::nn::WeightNorm>(weight));
      bias_ = register_parameter("bias", ng::zeros({out}));
      break;
    default:
      weight_ = register_parameter("weight", weight);
      output_norm_ = register_module("norm", ng::nn::make_norm(norm, out, layout));
      break;
  }
}

Tensor NormalizedLayer::weight() const {
  if (weight_norm_) return weight_norm_->weight();
  if (norm_.kind != NormKind::None) return weight_;
  ng::Shape channels(static_cast<std::size_t>(weight_.dim()), 1);
  channels[0] = weight_.size(0);
  return weight_ * scale_.reshape(channels);
}

Tensor NormalizedLayer::product(const Tensor& x, const Tensor& bias_parameter) const {
  // In mixed precision the weight and bias are rounded to x's bfloat16 for the op.
  const Tensor w = ng::in_input_dtype(weight(), x);
  const Tensor bias = ng::in_input_dtype(bias_parameter, x);
  if (is_convolution()) return ng::conv2d(x, w, bias, 1, padding_);
  const Tensor y = ng::matmul(x, w.t());
  return bias.defined() ? y + bias : y;
}

Tensor NormalizedLayer::forward(const Tensor& x) const {
  // none and weightnorm: g and b fold into the product (the convolution adds b as it writes).
  if (norm_.kind == NormKind::None || norm_.kind == NormKind::WeightNorm) return product(x, bias_);
  return output_norm_->forward(product(x));
}

Tensor NormalizedLayer::initialise_from_data(const Tensor& x) {
  ng::NoGradGuard no_grad;
  if (norm_.kind == NormKind::None) {
    // As the code's InitLayer: the outputs with the current scale, their per-channel mean m and
    // standard deviation s (over the batch and the positions); then g / s and b = -m / s.
    const Tensor y = product(x);
    const std::vector<std::int64_t> dims =
        is_convolution() ? std::vector<std::int64_t>{0, 2, 3} : std::vector<std::int64_t>{0};
    const Tensor mean = y.mean(dims);
    const Tensor centred = y - as_channels(mean, is_convolution());
    const Tensor deviation = ng::sqrt((centred * centred).mean(dims));
    NG_CHECK(ng::min(deviation).item() > 0, "convpool_cnn_c",
             "data-dependent initialisation: a channel's outputs are constant on the "
             "initialisation batch; use more images");
    scale_.copy_(scale_ / deviation);
    bias_.copy_(-mean / deviation);
  } else if (norm_.kind == NormKind::WeightNorm) {
    bias_.copy_(weight_norm_->init_from_data(product(x), 1, 1.0));
  }
  return forward(x);
}

ConvPoolCnnC::ConvPoolCnnC(const ModelConfig& config)
    : config_(config),
      activation_dtype_(
          examples::activation_dtype(config.precision, ng::DType::Float32, "convpool_cnn_c")),
      norm_(parse_model_norm(config.norm)),
      noise_generator_(config.seed + 1) {
  NG_CHECK(config.input_channels >= 1, "convpool_cnn_c",
           "the images need at least one channel, got ", config.input_channels);
  NG_CHECK(config.input_noise >= 0 && config.dropout >= 0 && config.dropout < 1, "convpool_cnn_c",
           "needs input noise >= 0 and dropout in [0, 1), got ", config.input_noise, " and ",
           config.dropout);
  const std::int64_t narrow = scaled_channels(96, config.width);
  const std::int64_t wide = scaled_channels(192, config.width);
  ng::Generator generator(config.seed);
  struct LayerShape {
    std::int64_t in, out, kernel, padding;
  };
  const std::vector<LayerShape> shapes{{config.input_channels, narrow, 3, 1},
                                       {narrow, narrow, 3, 1},
                                       {narrow, narrow, 3, 1},
                                       {narrow, wide, 3, 1},
                                       {wide, wide, 3, 1},
                                       {wide, wide, 3, 1},
                                       {wide, wide, 3, 0},
                                       {wide, wide, 1, 0},
                                       {wide, wide, 1, 0},
                                       {wide, classes, 0, 0}};
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const LayerShape& s = shapes[i];
    const std::string name = i + 1 < shapes.size() ? "conv" + std::to_string(i + 1) : "dense";
    layers_.push_back(register_module(
        name,
        std::make_shared<NormalizedLayer>(s.in, s.out, s.kernel, s.padding, norm_, generator)));
  }
}

bool ConvPoolCnnC::needs_data_initialisation() const {
  return norm_.kind == NormKind::None || norm_.kind == NormKind::WeightNorm;
}

Tensor ConvPoolCnnC::run(const Tensor& images, bool initialise) {
  NG_CHECK(images.dim() == 4 && images.size(1) == config_.input_channels &&
               images.size(2) >= min_side && images.size(3) >= min_side,
           "convpool_cnn_c", "expects images [N, ", config_.input_channels,
           ", H, W] with H and W at least ", min_side, ", got shape ", images.shape());
  const bool training = is_training();
  const auto layer = [&](std::size_t i, const Tensor& x) {
    return initialise ? layers_[i]->initialise_from_data(x) : layers_[i]->forward(x);
  };
  const auto block = [&](std::size_t first, Tensor x) {
    for (std::size_t i = first; i < first + 3; ++i) x = ng::leaky_relu(layer(i, x), leaky_slope);
    return x;
  };
  // Mixed precision rounds the images once, here (the data-dependent initialisation stays
  // float32); other images go on as they are, and a dtype the weights do not take is refused.
  const bool mixed = !initialise && activation_dtype_ == ng::DType::BFloat16;
  Tensor x = mixed ? images.to(ng::DType::BFloat16) : images;
  if (training && config_.input_noise > 0)
    x = x + ng::randn(x.shape(), noise_generator_, {.dtype = x.dtype(), .device = x.device()}) *
                config_.input_noise;
  x = block(0, x);
  x = ng::nn::functional::dropout(ng::max_pool2d(x, 2), config_.dropout, training,
                                  noise_generator_);
  x = block(3, x);
  x = ng::nn::functional::dropout(ng::max_pool2d(x, 2), config_.dropout, training,
                                  noise_generator_);
  x = block(6, x);  // the 3x3 convolution without padding and the two 1x1
  return layer(9, ng::global_avg_pool2d(x));
}

Tensor ConvPoolCnnC::forward(const Tensor& images) { return run(images, false); }

void ConvPoolCnnC::initialise_from_data(const Tensor& images) {
  if (!needs_data_initialisation()) return;
  ng::NoGradGuard no_grad;
  const bool was_training = is_training();
  train(true);
  run(images, true);
  train(was_training);
}

}  // namespace convpool_cnn_c
