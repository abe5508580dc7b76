#pragma once
// transformer_nmt train: the whole training run of one model folder (nmt/training_run.h): the
// tokenizer and the folder, batches of about batch_tokens tokens, Adam with beta2 0.98 on the
// inverse-square-root schedule, dev loss and BLEU at their intervals, training states and exact
// resume.

#include <normgrad/normgrad.h>

#include "model_folder.h"
#include "nmt/training_run.h"
#include "settings.h"

namespace transformer_nmt {

using TrainOptions = nmt::TrainOptions<Settings>;

nmt::TrainSummary train(const TrainOptions& options);

}  // namespace transformer_nmt
