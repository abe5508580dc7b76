#pragma once
// gru_nmt train: the whole training run of one model folder. A new run trains the tokenizer on
// the training text and writes the folder's configuration; every step logs a CSV row; dev
// loss and dev BLEU are measured at their intervals, the best weights kept, and training stops
// early after `patience` BLEU evaluations without a new best; training states are written at
// their interval and at the end. --resume continues from the newest training state with the
// same batches, the same random numbers and so the same losses as an uninterrupted run.

#include <normgrad/normgrad.h>

#include <ostream>
#include <string>
#include <vector>

#include "model_folder.h"
#include "nmt/training_run.h"
#include "settings.h"

namespace gru_nmt {

struct TrainOptions {
  std::string folder{};
  Settings settings{};  // for a new run; a resumed run reads the folder's (budgets below apply)
  bool resume = false;
  // A new run trains its tokenizer on the training text unless given one here (a
  // sentencepiece model file, e.g. another folder's tokenizer.model), which it copies into its
  // folder: runs that share one share their vocabulary and their token cache.
  std::string tokenizer{};
  // On resume, these replace the folder's budgets when set (> 0), so a run can be extended.
  std::int64_t resume_max_steps = 0;
  double resume_max_seconds = -1;  // < 0: keep the folder's
  normgrad::Device device = normgrad::Device::cpu();
  bool progress_bar = false;         // a redrawn line (a terminal) instead of a line per dev loss
  std::ostream* messages = nullptr;  // progress and notes; nothing when null
};

using nmt::TrainSummary;

TrainSummary train(const TrainOptions& options);

}  // namespace gru_nmt
