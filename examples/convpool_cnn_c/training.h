#pragma once
// Training ConvPool-CNN-C as the paper's CIFAR-10 code trains it: Adam (beta2 0.999, eps 1e-8
// inside the square root), batches of 100 in a new order every epoch (the last partial batch
// left out), and a schedule over E epochs:
//   learning rate  base * min(2 - epoch / (E / 2), 1): constant for the first half, then down
//                  towards 0; base 0.003, or 0.0003 for the baseline without a norm
//   beta1          0.9 in the first half, 0.5 in the second
// Each epoch records the training loss and error over its batches (noise and dropout on, as
// the code reports them) and the test error in evaluation mode.
//
// A Trainer's whole state (model, Adam, the model's noise draws, the epochs done and their
// records) goes into one file and comes back from it, so that a resumed run continues exactly
// as an uninterrupted one.

#include <normgrad/normgrad.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/training_state.h"
#include "data.h"
#include "data/shards.h"
#include "distributed/data_parallel.h"
#include "model.h"

namespace convpool_cnn_c {

struct TrainSettings {
  std::int64_t epochs = 200;
  std::int64_t batch_size = 100;
  double learning_rate = 0;        // the schedule's base; 0: base_learning_rate(norm)
  std::int64_t init_images = 500;  // for data-dependent initialisation
  std::uint64_t seed = 1;          // the order of the batches
};

double base_learning_rate(const normgrad::nn::NormSpec& norm);

// One line that names everything about the model a training state must agree with.
std::string describe(const ModelConfig& config);

struct EpochSchedule {
  double learning_rate = 0, beta1 = 0;
};
// The schedule for epoch `epoch` (0-based) of `epochs`.
EpochSchedule schedule_for(std::int64_t epoch, std::int64_t epochs, double base_learning_rate);

struct EpochRecord {
  std::int64_t epoch = 0;  // epochs done, from 1
  double train_loss = 0;   // mean cross-entropy over the epoch's batches
  double train_error = 0;  // the fraction of the epoch's training images misclassified
  double test_error = 0;   // on the test set, in evaluation mode
  double seconds = 0;      // the epoch's training time; evaluation left out
  double learning_rate = 0, beta1 = 0;
};

// The records as CSV (a header line, then one line per epoch) and back.
std::string history_csv(const std::vector<EpochRecord>& history);
std::vector<EpochRecord> parse_history_csv(const std::string& text);

// The fraction of `dataset` misclassified, in evaluation mode and without a graph; the model's
// mode is left as it was. The images go to `device` `batch` at a time. In data-parallel
// training (`shard` of several) each rank counts its share of the batches and the ranks sum
// their counts.
double classification_error(ConvPoolCnnC& model, const normgrad::data::ImageDataset& dataset,
                            normgrad::Device device, std::int64_t batch = 500,
                            const normgrad::data::Shard& shard = {});

// One training step on a batch (images and labels on the model's device): zero_grad, forward
// in training mode, mean cross-entropy, backward, Adam. Returns the loss and the batch's
// misclassified images. bench/bench_convpool_cnn_c.cpp times exactly this.
struct StepResult {
  double loss = 0;
  std::int64_t mistakes = 0;
};
StepResult train_step(ConvPoolCnnC& model, normgrad::optim::Adam& adam,
                      const normgrad::Tensor& images, const normgrad::Tensor& labels);

// Adam as the paper's code sets it up: beta2 0.999, eps 1e-8 inside the square root.
normgrad::optim::AdamOptions paper_adam(double learning_rate);

struct StepReport {
  std::int64_t epoch = 0, epochs = 0;   // the epoch under way (from 1) of how many
  std::int64_t batch = 0, batches = 0;  // batches done in it, of how many
  double loss = 0;                      // this batch's
};
using StepCallback = std::function<void(const StepReport&)>;

class Trainer {
 public:
  // A fresh model from `model` on `device`, initialised from the first init_images training
  // images where its norm needs it. Bad settings throw normgrad::Error before any work. With
  // a `shard` of several, one rank of data-parallel training: it trains on its share of each
  // epoch's batches, its gradients averaged with the other ranks' (rank 0's model is
  // everyone's), and the epoch's records are the whole job's.
  Trainer(const ModelConfig& model, const TrainSettings& settings, const PreparedData& data,
          normgrad::Device device, const normgrad::data::Shard& shard = {});

  // Trains one epoch and evaluates; returns its record, also kept in history().
  EpochRecord run_epoch(const StepCallback& on_step = {});
  bool finished() const { return epochs_done() >= settings_.epochs; }
  std::int64_t epochs_done() const { return static_cast<std::int64_t>(history_.size()); }
  const std::vector<EpochRecord>& history() const { return history_; }
  std::int64_t batches_per_epoch() const;
  double base_learning_rate() const { return base_learning_rate_; }

  // The whole training state, atomically; and back, checked against this Trainer's model.
  void save_state(const std::string& path) const;
  void load_state(const std::string& path);

  ConvPoolCnnC& model() { return *model_; }

 private:
  examples::RunState run_state() const;  // what a training state holds

  TrainSettings settings_;
  const PreparedData& data_;  // the caller keeps it alive while the Trainer lives
  normgrad::Device device_;
  double base_learning_rate_ = 0;
  std::unique_ptr<ConvPoolCnnC> model_;
  std::unique_ptr<normgrad::optim::Adam> adam_;
  normgrad::data::Shard shard_;
  std::unique_ptr<normgrad::distributed::DataParallel> parallel_;  // with a shard of several
  std::vector<EpochRecord> history_;
};

}  // namespace convpool_cnn_c
