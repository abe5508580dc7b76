#pragma once
// Training the attentive reader as the RMSNorm paper's run of the reader's code does: Adam at
// 8e-5 (beta2 0.999, eps 1e-8), batches of 64 questions with the entities renumbered at random
// in each, gradients clipped to a global norm of 10, and every 1000 steps a validation: the
// error (the share of questions whose highest-scoring word is not the answer) over the whole
// validation set, dropout off.
//
// Two departures from that code, both deliberate: it clips with a norm that is off by a
// square root (clipping only above 100, to 10 sqrt(norm)), and it reads the training
// questions in their stored order; here the clipping is the standard one and each epoch
// visits the questions in a new order from the seed and the epoch, so that a resumed run sees
// the same batches as an uninterrupted one. The last partial batch of an epoch is left out.

#include <normgrad/normgrad.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "batches.h"
#include "common/training_state.h"
#include "model.h"

namespace attentive_reader {

struct TrainSettings {
  std::int64_t steps = 100000;
  std::int64_t batch_size = 64;
  double learning_rate = 8e-5;
  double clip = 10.0;  // the gradients' largest global norm; 0: no clipping
  std::int64_t valid_every = 1000;
  std::uint64_t seed = 1;  // the batches and the entity renumbering
};

struct ValidationRecord {
  std::int64_t step = 0;
  double seconds = 0;      // training time so far, validations left out
  double train_loss = 0;   // mean loss of the steps since the last validation
  double train_error = 0;  // their error
  double valid_error = 0;
  double valid_loss = 0;
};

std::string history_csv(const std::vector<ValidationRecord>& history);
std::vector<ValidationRecord> parse_history_csv(const std::string& text);

struct Evaluation {
  double error = 0, loss = 0;
  std::int64_t questions = 0;
};
// Error and mean loss over every question, in batches, dropout off, without a graph; the
// model's mode is left as it was.
Evaluation evaluate_questions(AttentiveReader& model, const std::vector<Question>& questions,
                              const ReaderVocabulary& vocabulary, normgrad::Device device,
                              std::int64_t batch_size = 64);

// The questions of step `step`'s batch.
std::vector<std::int64_t> batch_questions(const TrainSettings& settings, std::int64_t step,
                                          std::int64_t questions);

struct StepReport {
  std::int64_t step = 0, steps = 0;
  double loss = 0;
};
using StepCallback = std::function<void(const StepReport&)>;

class Trainer {
 public:
  Trainer(const ModelConfig& model, const TrainSettings& settings,
          const std::vector<Question>& training, const std::vector<Question>& validation,
          const ReaderVocabulary& vocabulary, normgrad::Device device);

  // One training step on a batch on the device: returns its loss and its mistakes.
  struct StepResult {
    double loss = 0;
    std::int64_t mistakes = 0;
  };
  StepResult step(const QuestionBatch& batch);
  ValidationRecord run_to_validation(const StepCallback& on_step = {});
  bool finished() const { return steps_done_ >= settings_.steps; }
  bool improved() const { return improved_; }
  std::int64_t steps_done() const { return steps_done_; }
  std::int64_t steps_per_epoch() const;
  const std::vector<ValidationRecord>& history() const { return history_; }
  const ValidationRecord* best() const;  // lowest validation error; nullptr before any

  void save_state(const std::string& path);
  void load_state(const std::string& path);
  AttentiveReader& model() { return *model_; }

 private:
  // What the training state holds: the model, Adam, the generator and whose they are.
  examples::RunState run_state();

  TrainSettings settings_;
  const std::vector<Question>& training_;
  const std::vector<Question>& validation_;
  const ReaderVocabulary& vocabulary_;
  normgrad::Device device_;
  std::unique_ptr<AttentiveReader> model_;
  std::unique_ptr<normgrad::optim::Adam> adam_;
  std::int64_t steps_done_ = 0;
  std::vector<ValidationRecord> history_;
  bool improved_ = false;
};

}  // namespace attentive_reader
