#pragma once
// One factory for every normaliser, so that a model names its normaliser in one word and
// swapping LayerNorm for RMSNorm changes nothing else:
//
//   auto norm = nn::make_norm("rmsnorm", 512);              // an RMSNorm over 512 features
//   auto maps = nn::make_norm("prmsnorm:0.125", 96, nn::NormLayout::ChannelMaps);
//   Tensor y = norm->forward(x);
//
// A spec is `kind[:p][,key=value]...`:
//   kind       none | layernorm | rmsnorm | prmsnorm[:p] | l2norm | batchnorm | weightnorm
//   p          pRMSNorm's fraction, in (0, 1]; 0.0625 when left out, as in the paper
//   eps=E      the normaliser's epsilon (each has its own default otherwise)
//   placement=outside  the RMS family's eps outside the square root (default inside)
//   rounding=floor  pRMSNorm's k = floor(n p) as in the paper's code (default ceil(n p))
//   bias=on|off     a bias after the gain (default: on for LayerNorm and BatchNorm, off for
//                   the RMS family and L2Norm, as in the paper's code); for BatchNorm, off
//                   drops the gain too (its affine option)
// for example "prmsnorm:0.0625,eps=1e-8,placement=outside".
//
// "none" and "weightnorm" give an Identity: WeightNorm reparameterises a layer's weight
// instead of normalising its outputs, so a layer whose spec says reparameterises_weight()
// wraps its weight in nn::WeightNorm (weight_norm.h).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "nn/norms/composed.h"
#include "nn/norms/norm.h"

namespace normgrad::nn {

enum class NormKind { None, LayerNorm, RMSNorm, PartialRMSNorm, L2Norm, BatchNorm, WeightNorm };

struct NormSpec {
  NormSpec() = default;  // "none"
  // A spec string converts implicitly, so options can say {.norm = "rmsnorm"}; a bad one
  // throws as parse() does.
  NormSpec(const char* text) : NormSpec(parse(text)) {}         // NOLINT: implicit on purpose
  NormSpec(const std::string& text) : NormSpec(parse(text)) {}  // NOLINT
  NormSpec(std::string_view text) : NormSpec(parse(text)) {}    // NOLINT

  NormKind kind = NormKind::None;
  double partial = 0.0625;  // p, for PartialRMSNorm
  std::optional<double> eps;
  EpsPlacement placement = EpsPlacement::InsideSqrt;
  PartialRounding rounding = PartialRounding::Ceil;
  std::optional<bool> bias;

  // Parses a spec string; a bad one throws normgrad::Error listing the valid kinds.
  static NormSpec parse(std::string_view text);
  std::string str() const;  // the canonical spec string; parse(str()) gives the same spec

  bool reparameterises_weight() const { return kind == NormKind::WeightNorm; }
  bool normalises_outputs() const { return kind != NormKind::None && kind != NormKind::WeightNorm; }
};

// How a layer's outputs are laid out, which decides what one normalised group is.
enum class NormLayout {
  Features,     // [..., features]: each row of features (BatchNorm: each feature over the batch)
  ChannelMaps,  // [N, C, H, W]: each (sample, channel) map over H x W, one gain per channel,
                // as the paper's CIFAR code (BatchNorm: each channel over N, H and W)
};

std::shared_ptr<Norm> make_norm(const NormSpec& spec, std::int64_t features,
                                NormLayout layout = NormLayout::Features,
                                DType dtype = DType::Float32);

}  // namespace normgrad::nn
