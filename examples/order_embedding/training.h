#pragma once
// Training order embeddings as the original code does (its train.py and datasource.py): Adam
// at 1e-3, batches of 128 images each paired with one of its captions drawn at random, the
// summed contrastive hinge loss with margin 0.05, every gradient clipped to norm 2 on its own,
// and every 300 steps a validation on the dev images (retrieval in both directions), keeping
// the model whose image retrieval R@1 + R@5 + R@10 is the best so far.
//
// Batches: each epoch visits the training images in a new order (the last partial batch left
// out), and draws each image's caption anew; both come from the seed and the epoch alone, so a
// resumed run sees the same batches as an uninterrupted one.

#include <normgrad/normgrad.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/training_state.h"
#include "common/validated_run.h"
#include "dataset.h"
#include "model.h"
#include "vocabulary.h"

namespace order_embedding {

using TrainSettings = examples::StepTraining;

// The original code's training: Adam at 1e-3, batches of 128, every gradient clipped to norm 2
// on its own, a validation every 300 steps.
inline constexpr TrainSettings kPaperTraining{.steps = 30000,
                                              .batch_size = 128,
                                              .learning_rate = 1e-3,
                                              .clip = 2,
                                              .valid_every = 300,
                                              .seed = 1};

struct ValidationRecord {
  std::int64_t step = 0;
  double seconds = 0;     // training time so far, validations left out
  double train_loss = 0;  // mean loss of the steps since the last validation
  normgrad::data::RetrievalScores dev;

  // The highest dev image recall sum (R@1 + R@5 + R@10) is the best; the record on the run's
  // lines (validated_run.h).
  static constexpr examples::Better better = examples::Better::Higher;
  double score() const { return normgrad::data::image_recall_sum(dev); }
  std::string text() const;       // "loss   32.161  dev caption R@1 0.0 ..."
  std::string best_text() const;  // "best dev at step 20: caption R@1 3.0 ..."
};

// The records as CSV (a header line, then one per validation) and back.
std::string history_csv(const std::vector<ValidationRecord>& history);
std::vector<ValidationRecord> parse_history_csv(const std::string& text);

// "R@1 45.8 R@5 79.7 R@10 88.8 mean 5.4 | ..." for a log line.
std::string scores_text(const normgrad::data::RetrievalScores& scores);

// Retrieval on `split` in folds of `fold_images` images (the last fold may be smaller, and is
// dropped when another came before it), averaged; the model's mode is left as it was.
normgrad::data::RetrievalScores evaluate_retrieval(OrderEmbeddingModel& model,
                                                   const Vocabulary& vocabulary,
                                                   const RetrievalSplit& split,
                                                   normgrad::Device device,
                                                   std::int64_t fold_images = 1000);

// The image and caption indices of step `step`'s batch (captions index split.captions).
struct BatchIndices {
  std::vector<std::int64_t> images, captions;
};
BatchIndices batch_indices(const TrainSettings& settings, std::int64_t step, std::int64_t images,
                           std::int64_t captions_per_image);

class Trainer {
 public:
  // A fresh model on `device`. Bad settings throw normgrad::Error before any work.
  Trainer(const ModelConfig& model, const TrainSettings& settings, const RetrievalSplit& train,
          const RetrievalSplit& dev, const Vocabulary& vocabulary, normgrad::Device device);

  // One step on batch `step`; returns its loss. bench/ and `time` time exactly this.
  double step(const CaptionBatch& captions, const normgrad::Tensor& features);
  // A step on the batch of step steps_done(): its loss, counted into the next validation's
  // record.
  double train_step();
  // Retrieval on the dev images, recorded with the steps since the last validation; the record
  // is kept in history().
  const ValidationRecord& validate();
  std::int64_t steps_done() const { return steps_done_; }
  const std::vector<ValidationRecord>& history() const { return history_; }

  void save_state(const std::string& path);
  void load_state(const std::string& path);

  OrderEmbeddingModel& model() { return *model_; }

 private:
  // What the training state holds: the model, Adam, the generator and whose they are.
  examples::RunState run_state();

  TrainSettings settings_;
  const RetrievalSplit& train_;
  const RetrievalSplit& dev_;
  const Vocabulary& vocabulary_;
  normgrad::Device device_;
  std::unique_ptr<OrderEmbeddingModel> model_;
  std::unique_ptr<normgrad::optim::Adam> adam_;
  normgrad::Generator generator_;  // kept in the state for the format; training draws none
  std::int64_t steps_done_ = 0;
  std::vector<ValidationRecord> history_;
  examples::StepsSinceValidation since_validation_;
};

}  // namespace order_embedding
