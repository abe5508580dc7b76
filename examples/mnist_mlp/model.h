#pragma once
// The permutation-invariant MNIST model of the LayerNorm paper (Ba, Kiros and Hinton 2016): a
// 784-1000-1000-10 multilayer perceptron whose two hidden layers are normalised by whichever
// normaliser a spec string names ("none", "layernorm", "rmsnorm", "prmsnorm:0.0625",
// "batchnorm", ...); the logit layer is never normalised.
//
// Each hidden layer is Linear -> Norm -> ReLU. The papers normalise the summed inputs of a
// layer and apply the nonlinearity last (RMSNorm paper Eq. 4 and LayerNorm paper Eq. 3:
// y = f(g * a / RMS(a) + b) with a = W x), so the norm sits between the matrix product and
// the ReLU: it removes the scale (and for LayerNorm and BatchNorm the mean) of the signed
// summed inputs, and the ReLU then thresholds the normalised values against the bias b.

#include <normgrad/normgrad.h>

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "common/classification.h"

namespace mnist_mlp {

struct ModelShape {
  std::int64_t inputs = 784;                     // 28 x 28 pixels, order ignored
  std::vector<std::int64_t> hidden{1000, 1000};  // the normalised layers
  std::int64_t classes = 10;
};

// The spec as this model uses it. A spec that does not say bias=on|off gets a bias after the
// gain, as in the papers' formula y = f(g * a_hat + b); the factory's own default for the
// RMS family (no bias, as in the RMSNorm code) is one word away: "rmsnorm,bias=off".
// A bad spec throws normgrad::Error listing the valid ones.
normgrad::nn::NormSpec parse_model_norm(std::string_view spec);

// Builds the model. Every Linear weight comes from one Generator seeded with `seed`, drawn in
// the same order whatever the normaliser, so runs with the same seed start from the same
// weight matrices and differ only in their normalisers.
//
// A Linear feeding a normaliser has no bias of its own: the normaliser's bias takes its place
// (with BatchNorm or LayerNorm a bias before the norm is cancelled entirely or partly by the
// mean subtraction; with RMSNorm it would be scaled along with a). With "none" the Linear
// keeps its bias. With "weightnorm" each hidden Linear's weight is reparameterised as
// g v / ||v|| (nn::WeightNorm) and keeps its bias.
std::shared_ptr<normgrad::nn::Sequential> make_model(const normgrad::nn::NormSpec& norm,
                                                     const ModelShape& shape = {},
                                                     std::uint64_t seed = 0);

// The values of the model's parameters, all told.
using examples::count_parameters;

}  // namespace mnist_mlp
