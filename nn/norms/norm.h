#pragma once
// Norm: the interface every activation normaliser offers — LayerNorm, RMSNorm, pRMSNorm,
// L2Norm, BatchNorm and Identity (the "none" choice) — so that a layer can hold whichever one
// its NormSpec names (factory.h) and call it without knowing which it is.

#include <optional>

#include "autograd/functions/norm.h"
#include "nn/layer.h"

namespace normgrad::nn {

// A Layer that normalises; what make_norm returns.
class Norm : public Layer {
 public:
  // This norm as a RowNorm over the last dim, for kernels that fuse it with the ops around it;
  // nullopt where it has no such form (BatchNorm, the per-channel form, a normalised shape of
  // more than one dim, Identity).
  virtual std::optional<RowNorm> row_form() const { return std::nullopt; }
};

// The "none" choice: passes its input through unchanged, with no parameters.
class Identity : public Norm {
 public:
  std::string type_name() const override { return "Identity"; }
  Tensor forward(const Tensor& x) override { return x; }
};

}  // namespace normgrad::nn
