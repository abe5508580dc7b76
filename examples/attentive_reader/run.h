#pragma once
// One training run in its model folder, as `train` and `experiment` both run it: the folder's
// configuration and vocabulary, then the run on the examples' validated run
// (common/validated_run.h): a validation every valid_every steps, each followed by the
// training state, train.csv and (when the validation error is the lowest so far)
// model.safetensors; a run already there is continued from its state.

#include <cstdio>
#include <vector>

#include "common/step_profile.h"
#include "model_folder.h"
#include "training.h"

namespace attentive_reader {

struct RunData {
  std::vector<Question> training, validation;
  ReaderVocabulary vocabulary;  // the folder's, or built from the training questions
};
RunData load_run_data(const ModelFolder& folder, const DataSettings& data);

std::vector<ValidationRecord> train_in_folder(const ModelFolder& folder, RunConfig run,
                                              normgrad::Device device, bool progress_bar,
                                              std::FILE* log,
                                              const examples::ProfileFlags& profile = {});

}  // namespace attentive_reader
