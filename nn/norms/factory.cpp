#include "nn/norms/factory.h"

#include <array>
#include <charconv>
#include <cmath>
#include <sstream>
#include <utility>

#include "base/error.h"
#include "nn/norms/batch_norm.h"
#include "nn/norms/l2_norm.h"
#include "nn/norms/layer_norm.h"
#include "nn/norms/rms_norm.h"

namespace normgrad::nn {

namespace {

constexpr std::array<std::pair<std::string_view, NormKind>, 7> kKinds{{
    {"none", NormKind::None},
    {"layernorm", NormKind::LayerNorm},
    {"rmsnorm", NormKind::RMSNorm},
    {"prmsnorm", NormKind::PartialRMSNorm},
    {"l2norm", NormKind::L2Norm},
    {"batchnorm", NormKind::BatchNorm},
    {"weightnorm", NormKind::WeightNorm},
}};

constexpr const char* kValid =
    "valid specs: none, layernorm, rmsnorm, prmsnorm[:p], l2norm, batchnorm, weightnorm, "
    "optionally followed by ,eps=E ,placement=inside|outside ,rounding=ceil|floor ,bias=on|off";

std::string_view trim(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return text;
}

double parse_number(std::string_view text, std::string_view spec, const char* what) {
  // from_chars for doubles is in libstdc++ 11 and later.
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  NG_CHECK(error == std::errc() && end == text.data() + text.size() && !text.empty(), "NormSpec",
           "'", text, "' in \"", spec, "\" is not a number (", what, ")");
  return value;
}

bool is_rms_family(NormKind kind) {
  return kind == NormKind::RMSNorm || kind == NormKind::PartialRMSNorm;
}

}  // namespace

NormSpec NormSpec::parse(std::string_view text) {
  const std::string_view spec = text;
  NormSpec result;
  // The kind, with pRMSNorm's fraction after a colon.
  const std::size_t comma = text.find(',');
  std::string_view head = trim(text.substr(0, comma));
  std::string_view fraction;
  const std::size_t colon = head.find(':');
  if (colon != std::string_view::npos) {
    fraction = trim(head.substr(colon + 1));
    head = trim(head.substr(0, colon));
  }
  bool known = false;
  for (const auto& [name, kind] : kKinds)
    if (head == name) result.kind = kind, known = true;
  NG_CHECK(known, "NormSpec", "unknown normaliser '", head, "' in \"", spec, "\"; ", kValid);
  if (colon != std::string_view::npos) {
    NG_CHECK(result.kind == NormKind::PartialRMSNorm, "NormSpec", "only prmsnorm takes a ':p' (\"",
             spec, "\"); ", kValid);
    result.partial = parse_number(fraction, spec, "pRMSNorm's fraction p");
    NG_CHECK(result.partial > 0 && result.partial <= 1, "NormSpec",
             "pRMSNorm's p must lie in (0, 1], got ", result.partial, " in \"", spec, "\"");
  }

  // Options: key=value pairs after commas.
  std::string_view rest = comma == std::string_view::npos ? "" : text.substr(comma + 1);
  while (!rest.empty()) {
    const std::size_t next = rest.find(',');
    const std::string_view option = trim(rest.substr(0, next));
    rest = next == std::string_view::npos ? "" : rest.substr(next + 1);
    const std::size_t equals = option.find('=');
    NG_CHECK(equals != std::string_view::npos, "NormSpec", "option '", option, "' in \"", spec,
             "\" is not key=value; ", kValid);
    const std::string_view key = trim(option.substr(0, equals));
    const std::string_view value = trim(option.substr(equals + 1));
    if (key == "eps") {
      result.eps = parse_number(value, spec, "eps");
      // An infinite eps would make every output 0, and a NaN every output NaN.
      NG_CHECK(std::isfinite(*result.eps) && *result.eps >= 0, "NormSpec",
               "eps must be finite and non-negative, got ", value, " in \"", spec, "\"");
    } else if (key == "placement" && (value == "inside" || value == "outside")) {
      NG_CHECK(is_rms_family(result.kind), "NormSpec",
               "placement applies to rmsnorm and prmsnorm only (\"", spec, "\")");
      result.placement = value == "inside" ? EpsPlacement::InsideSqrt : EpsPlacement::OutsideSqrt;
    } else if (key == "rounding" && (value == "ceil" || value == "floor")) {
      NG_CHECK(result.kind == NormKind::PartialRMSNorm, "NormSpec",
               "rounding applies to prmsnorm only (\"", spec, "\")");
      result.rounding = value == "ceil" ? PartialRounding::Ceil : PartialRounding::Floor;
    } else if (key == "bias" && (value == "on" || value == "off")) {
      NG_CHECK(result.normalises_outputs(), "NormSpec", "bias does not apply to '", head, "' (\"",
               spec, "\")");
      result.bias = value == "on";
    } else {
      NG_CHECK(false, "NormSpec", "unknown option '", option, "' in \"", spec, "\"; ", kValid);
    }
  }
  return result;
}

std::string NormSpec::str() const {
  std::ostringstream out;
  out.precision(17);
  for (const auto& [name, k] : kKinds)
    if (k == kind) out << name;
  if (kind == NormKind::PartialRMSNorm) out << ':' << partial;
  if (eps) out << ",eps=" << *eps;
  if (placement == EpsPlacement::OutsideSqrt) out << ",placement=outside";
  if (rounding == PartialRounding::Floor) out << ",rounding=floor";
  if (bias) out << ",bias=" << (*bias ? "on" : "off");
  return out.str();
}

std::shared_ptr<Norm> make_norm(const NormSpec& spec, std::int64_t features, NormLayout layout,
                                DType dtype) {
  NG_CHECK(features > 0, "make_norm", "features must be positive, got ", features, " (spec \"",
           spec.str(), "\")");
  const bool maps = layout == NormLayout::ChannelMaps;
  switch (spec.kind) {
    case NormKind::None:
    case NormKind::WeightNorm:
      return std::make_shared<Identity>();
    case NormKind::LayerNorm: {
      LayerNormOptions options{
          .bias = spec.bias.value_or(true), .per_channel = maps, .dtype = dtype};
      if (spec.eps) options.eps = *spec.eps;
      return std::make_shared<LayerNorm>(Shape{features}, options);
    }
    case NormKind::RMSNorm:
    case NormKind::PartialRMSNorm: {
      RMSNormOptions options{.placement = spec.placement,
                             .bias = spec.bias.value_or(false),
                             .partial = spec.kind == NormKind::RMSNorm ? 1.0 : spec.partial,
                             .rounding = spec.rounding,
                             .per_channel = maps,
                             .dtype = dtype};
      if (spec.eps) options.eps = *spec.eps;
      return std::make_shared<RMSNorm>(Shape{features}, options);
    }
    case NormKind::L2Norm: {
      L2NormOptions options{.bias = spec.bias.value_or(false), .per_channel = maps, .dtype = dtype};
      if (spec.eps) options.eps = *spec.eps;
      return std::make_shared<L2Norm>(Shape{features}, options);
    }
    case NormKind::BatchNorm: {
      BatchNormOptions options{.affine = spec.bias.value_or(true), .dtype = dtype};
      if (spec.eps) options.eps = *spec.eps;
      if (maps) return std::make_shared<BatchNorm2d>(features, options);
      return std::make_shared<BatchNorm1d>(features, options);
    }
  }
  NG_CHECK(false, "make_norm", "unhandled spec \"", spec.str(), "\"");
  return nullptr;
}

}  // namespace normgrad::nn
