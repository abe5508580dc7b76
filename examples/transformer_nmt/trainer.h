#pragma once
// transformer_nmt train: the whole training run of one model folder (nmt/training_run.h): the
// tokenizer and the folder, batches of about batch_tokens tokens, Adam with beta2 0.98 on the
// inverse-square-root schedule, dev loss and BLEU at their intervals, training states and exact
// resume.

#include <normgrad/normgrad.h>

#include <ostream>
#include <string>

#include "model_folder.h"
#include "nmt/training_run.h"
#include "settings.h"

namespace transformer_nmt {

struct TrainOptions {
  std::string folder{};
  Settings settings{};  // for a new run; a resumed run reads the folder's (budgets below apply)
  bool resume = false;
  // A sentencepiece model to use instead of training one (a new run copies it into its folder).
  std::string tokenizer{};
  // On resume, these replace the folder's budgets when set, so a run can be extended.
  std::int64_t resume_max_steps = 0;  // > 0
  double resume_max_seconds = -1;     // >= 0
  normgrad::Device device = normgrad::Device::cpu();
  bool progress_bar = false;
  std::ostream* messages = nullptr;
};

nmt::TrainSummary train(const TrainOptions& options);

}  // namespace transformer_nmt
