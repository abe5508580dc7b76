#pragma once
// One training run of the MNIST model: a normaliser, a batch size and a number of Adam steps
// (the LayerNorm paper trains this model with Adam at batch sizes 128 and 4). It records the
// curves of the paper's Figure 1 (training loss against steps and against wall-clock time)
// and the test accuracy at evaluation points.

#include <normgrad/normgrad.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/step_profile.h"
#include "model.h"

namespace mnist_mlp {

struct RunSettings {
  std::string norm = "rmsnorm";  // a spec for parse_model_norm
  ModelShape shape{};
  std::int64_t batch_size = 128;
  std::int64_t steps = 1000;
  double lr = 1e-3;
  std::uint64_t seed = 1;          // the initial weights and the order of the batches
  std::int64_t eval_every = 0;     // test accuracy every so many steps; 0: after the last only
  std::int64_t log_every = 0;      // a curve point every so many steps; 0: about 100 per run
  std::int64_t eval_batch = 1000;  // test images per forward pass when evaluating
  normgrad::Device device = normgrad::Device::cpu();  // where the model and its batches live
};

struct CurvePoint {
  std::int64_t step = 0;    // steps done
  double wall_seconds = 0;  // training time up to this step; evaluation time left out
  double train_loss = 0;    // mean training loss over the steps since the previous point
  std::optional<double> test_accuracy{};  // at evaluation points only, in [0, 1]
};

struct RunResult {
  std::string norm{};
  std::int64_t batch_size = 0;
  std::int64_t steps = 0;
  std::int64_t parameters = 0;
  double train_seconds = 0;  // wall-clock time of the training steps alone
  double ms_per_step = 0;    // train_seconds / steps, in milliseconds
  double test_accuracy = 0;  // after the last step, on the whole test set
  std::vector<CurvePoint> curve{};
  // The share of all cores' time that other processes took during the run, when the caller
  // measured it (common/cpu_share.h): what ms_per_step should be read against.
  std::optional<double> other_processes_cpu{};
};

// What a progress display hears after every step: the steps done and the step's training loss.
using StepCallback = std::function<void(std::int64_t step, double loss)>;

// Steps that `epochs` passes over `examples` take at `batch_size` (the last, partial batch of
// an epoch is dropped, so that BatchNorm never sees a batch smaller than the others).
std::int64_t steps_for_epochs(double epochs, std::int64_t examples, std::int64_t batch_size);

// The fraction of `dataset` the model classifies correctly (examples::count_correct: in
// evaluation mode, the images going to `device` a batch at a time).
double test_accuracy(normgrad::nn::Layer& model, const normgrad::data::ImageDataset& dataset,
                     normgrad::Device device, std::int64_t batch = 1000);

// Trains a fresh model from settings.seed on `train` and evaluates it on `test`. A bad spec,
// a batch larger than the training set or a non-positive count throws normgrad::Error.
// `profile`: steps of the run to profile (--profile).
RunResult train_run(const RunSettings& settings, const normgrad::data::ImageDataset& train,
                    const normgrad::data::ImageDataset& test, const StepCallback& on_step = {},
                    const examples::ProfileFlags& profile = {});

}  // namespace mnist_mlp
