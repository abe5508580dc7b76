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
#include <memory>
#include <string>
#include <vector>

#include "batches.h"
#include "common/training_state.h"
#include "common/validated_run.h"
#include "model.h"

namespace attentive_reader {

using TrainSettings = examples::StepTraining;

// The paper's run of the reader's code: Adam at 8e-5, batches of 64, the gradients' global norm
// clipped to 10, a validation every 1000 steps. The seed draws the batches and the entities'
// renumbering.
inline constexpr TrainSettings kPaperTraining{.steps = 100000,
                                              .batch_size = 64,
                                              .learning_rate = 8e-5,
                                              .clip = 10,
                                              .valid_every = 1000,
                                              .seed = 1};

struct ValidationRecord {
  std::int64_t step = 0;
  double seconds = 0;      // training time so far, validations left out
  double train_loss = 0;   // mean loss of the steps since the last validation
  double train_error = 0;  // their error
  double valid_error = 0;
  double valid_loss = 0;

  // The lowest validation error is the best; the record on the run's lines (validated_run.h).
  static constexpr examples::Better better = examples::Better::Lower;
  double score() const { return valid_error; }
  std::string text() const;       // "loss 2.714  train error  93.8%  valid error  92.6% ..."
  std::string best_text() const;  // "lowest validation error 85.19% at step 20"
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
  // A step on the batch of step steps_done(), its entities renumbered: its loss, counted into
  // the next validation's record.
  double train_step();
  // The error and loss on every validation question, recorded with the steps since the last
  // validation; the record is kept in history().
  const ValidationRecord& validate();
  std::int64_t steps_done() const { return steps_done_; }
  const std::vector<ValidationRecord>& history() const { return history_; }

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
  examples::StepsSinceValidation since_validation_;
  std::int64_t wrong_ = 0, answered_ = 0;  // the training questions since the last validation
};

}  // namespace attentive_reader
