#pragma once
// gru_nmt train: the whole training run of one model folder. A new run trains the tokenizer on
// the training text and writes the folder's configuration; every step logs a CSV row; dev
// loss and dev BLEU are measured at their intervals, the best weights kept, and training stops
// early after `patience` BLEU evaluations without a new best; training states are written at
// their interval and at the end. --resume continues from the newest training state with the
// same batches, the same random numbers and so the same losses as an uninterrupted run.

#include <normgrad/normgrad.h>

#include "model_folder.h"
#include "nmt/training_run.h"
#include "settings.h"

namespace gru_nmt {

using TrainOptions = nmt::TrainOptions<Settings>;

using nmt::TrainSummary;

TrainSummary train(const TrainOptions& options);

}  // namespace gru_nmt
