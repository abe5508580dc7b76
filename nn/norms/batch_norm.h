#pragma once
// BatchNorm1d and BatchNorm2d (Ioffe & Szegedy 2015), as in libtorch: each channel (dim 1)
// is normalised over the batch and the spatial positions, then scaled by a gain (init 1)
// and shifted by a bias (init 0), one of each per channel.
//
// In training the batch's statistics are used and the running estimates running_mean
// (init 0) and running_var (init 1) follow them with `momentum`, the weight of the new batch
// (PyTorch's convention; the paper's CIFAR code says 0.9 for the same update, see
// normgrad::batch_norm in fused.h). In evaluation the running estimates are used instead. Without
// track_running_stats there are no running estimates, and the batch's statistics are used
// in evaluation too.
//
// The paper's CIFAR model (its Appendix A.4) uses eps = 1e-6 and these defaults otherwise.

#include <cstdint>
#include <string>

#include "autograd/functions/batch_norm.h"
#include "autograd/functions/norm.h"
#include "nn/norms/norm.h"

namespace normgrad::nn {

struct BatchNormOptions {
  double eps = 1e-5;
  double momentum = 0.1;
  bool affine = true;  // gain and bias
  bool track_running_stats = true;
  DType dtype = DType::Float32;
};

// What BatchNorm1d and BatchNorm2d share; they differ in the input ranks they accept.
class BatchNorm : public Norm {
 public:
  Tensor gain;  // [C]; undefined without affine
  Tensor bias;
  Tensor running_mean;  // [C]; undefined without track_running_stats
  Tensor running_var;

  std::int64_t num_features() const { return num_features_; }
  const BatchNormOptions& options() const { return options_; }
  // Updates the running estimates in training mode.
  Tensor forward(const Tensor& x) override;

 protected:
  // `layout` names the accepted inputs in messages, e.g. "[N, C] or [N, C, L]".
  BatchNorm(std::int64_t num_features, BatchNormOptions options, const char* module,
            std::int64_t min_rank, std::int64_t max_rank, const char* layout);

 private:
  std::int64_t num_features_;
  BatchNormOptions options_;
  const char* module_;
  std::int64_t min_rank_, max_rank_;
  const char* layout_;
};

// Input [N, C] (the statistics over the batch) or [N, C, L] (over the batch and L).
class BatchNorm1d final : public BatchNorm {
 public:
  explicit BatchNorm1d(std::int64_t num_features, BatchNormOptions options = {});
  std::string type_name() const override { return "BatchNorm1d"; }
};

// Input [N, C, H, W]: the statistics over the batch and H x W.
class BatchNorm2d final : public BatchNorm {
 public:
  explicit BatchNorm2d(std::int64_t num_features, BatchNormOptions options = {});
  std::string type_name() const override { return "BatchNorm2d"; }
};

}  // namespace normgrad::nn
