// The bytes as a norm spec string: nn::NormSpec::parse, then the spec's canonical string must
// parse back to the same spec (str() promises it), and make_norm must build it.

#include "harness_support.h"
#include "harnesses.h"

namespace normgrad::fuzz {

namespace {

bool same_spec(const nn::NormSpec& a, const nn::NormSpec& b) {
  return a.kind == b.kind && a.partial == b.partial && a.eps == b.eps &&
         a.placement == b.placement && a.rounding == b.rounding && a.bias == b.bias;
}

}  // namespace

int fuzz_norm_spec(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  return accept_errors([&] {
    const nn::NormSpec spec = nn::NormSpec::parse(text);
    require(same_spec(nn::NormSpec::parse(spec.str()), spec),
            "a spec's canonical string does not parse back to the same spec");
    nn::make_norm(spec, 8);
  });
}

}  // namespace normgrad::fuzz
