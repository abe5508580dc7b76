#pragma once
// One training run in its model folder, as `train` and `experiment` both run it: the folder's
// configuration and vocabulary, then the run on the examples' validated run
// (common/validated_run.h): validations every valid_every steps, each followed by the training
// state, train.csv and (when the validation is the best so far) model.safetensors; a run
// already there is continued from its state.

#include <cstdio>
#include <vector>

#include "common/step_profile.h"
#include "model_folder.h"
#include "training.h"

namespace order_embedding {

// The data a run trains and validates on, and its vocabulary (from the folder when it has one,
// else built from the training and dev captions, as the original code builds it).
struct RunData {
  RetrievalSplit train, dev;
  Vocabulary vocabulary;
};
RunData load_run_data(const ModelFolder& folder, const DataSettings& data);

// Trains `run` in `folder` to its last step, continuing from the folder's state when it has one
// (the caller has checked that the folder's run is `run`; run.model.vocabulary is set here).
// Prints a line per validation to `log`; a progress line on stderr with `progress_bar`.
// Returns every validation's record.
std::vector<ValidationRecord> train_in_folder(const ModelFolder& folder, RunConfig run,
                                              normgrad::Device device, bool progress_bar,
                                              std::FILE* log,
                                              const examples::ProfileFlags& profile = {});

}  // namespace order_embedding
