#include "model.h"

#include <cmath>
#include <string>

namespace mnist_mlp {

namespace ng = normgrad;

namespace {

// The bias stream is separate from the weight stream, so that a model with biases in its
// Linears ("none", "weightnorm") draws the same weights as one without.
constexpr std::uint64_t kBiasStream = 0x9e3779b97f4a7c15ULL;

// PyTorch's default Linear initialisation, U(-1/sqrt(in), 1/sqrt(in)), from our generator.
void initialise(ng::Tensor& tensor, std::int64_t in_features, ng::Generator& generator) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
  ng::nn::init::uniform_(tensor, -bound, bound, generator);
}

// A Linear whose weight is reparameterised by WeightNorm: y = x (g v / ||v||)^T + b.
class WeightNormLinear : public ng::nn::Layer {
 public:
  WeightNormLinear(const ng::Tensor& weight, const ng::Tensor& bias)
      : weight_norm_(register_module("weight_norm", std::make_shared<ng::nn::WeightNorm>(weight))),
        bias_(register_parameter("bias", bias)) {}
  std::string type_name() const override { return "WeightNormLinear"; }
  ng::Tensor forward(const ng::Tensor& x) override {
    return ng::nn::functional::linear(x, weight_norm_->weight(), bias_);
  }

 private:
  std::shared_ptr<ng::nn::WeightNorm> weight_norm_;
  ng::Tensor bias_;
};

}  // namespace

ng::nn::NormSpec parse_model_norm(std::string_view spec) {
  ng::nn::NormSpec parsed = ng::nn::NormSpec::parse(spec);
  if (parsed.normalises_outputs() && !parsed.bias) parsed.bias = true;
  return parsed;
}

std::shared_ptr<ng::nn::Sequential> make_model(const ng::nn::NormSpec& norm,
                                               const ModelShape& shape, std::uint64_t seed) {
  NG_CHECK(shape.inputs > 0 && shape.classes > 0 && !shape.hidden.empty(), "mnist_mlp::make_model",
           "the model needs inputs, classes and at least one hidden layer, got ", shape.inputs,
           " inputs, ", shape.classes, " classes and ", shape.hidden.size(), " hidden layers");
  ng::Generator weights(seed);
  ng::Generator biases(seed ^ kBiasStream);
  auto model = std::make_shared<ng::nn::Sequential>();
  std::int64_t in_features = shape.inputs;
  for (const std::int64_t units : shape.hidden) {
    // The Linear draws its own initial values from the default generator; they are
    // overwritten here so that only `seed` decides the model.
    auto linear = std::make_shared<ng::nn::Linear>(
        in_features, units, ng::nn::LinearOptions{.bias = !norm.normalises_outputs()});
    initialise(linear->weight, in_features, weights);
    if (linear->bias.defined()) initialise(linear->bias, in_features, biases);
    if (norm.reparameterises_weight()) {
      model->push_back(
          std::make_shared<WeightNormLinear>(linear->weight.detach(), linear->bias.detach()));
    } else {
      model->push_back(linear);
      model->push_back(ng::nn::make_norm(norm, units));  // an Identity for "none"
    }
    model->push_back(std::make_shared<ng::nn::ReLU>());
    in_features = units;
  }
  auto logits = std::make_shared<ng::nn::Linear>(in_features, shape.classes);
  initialise(logits->weight, in_features, weights);
  initialise(logits->bias, in_features, biases);
  model->push_back(logits);
  return model;
}

}  // namespace mnist_mlp
