#pragma once
// One training run in its model folder, as `train` and `experiment` both run it: the folder's
// configuration, whitening, weights, training state and train.csv written after every epoch,
// and a run already there continued from its state.

#include <cstdio>
#include <vector>

#include "common/step_profile.h"
#include "model_folder.h"
#include "training.h"

namespace convpool_cnn_c {

// Trains `run` in `folder` to its last epoch, continuing from the folder's state when it has
// one (the caller has checked that the folder's run is `run`). Prints a line per epoch to
// `log`; a progress line on stderr with `progress_bar`. Returns the records of every epoch.
// With a `shard` of several, one rank of data-parallel training (Trainer): every rank reads
// the folder, and rank 0 alone writes it and prints. `profile`: batches to profile (rank 0's).
std::vector<EpochRecord> train_in_folder(const ModelFolder& folder, const RunConfig& run,
                                         normgrad::Device device, bool progress_bar, std::FILE* log,
                                         const normgrad::data::Shard& shard = {},
                                         const examples::ProfileFlags& profile = {});

// The whitening a folder keeps.
normgrad::data::ZcaWhitening load_whitening(const ModelFolder& folder);

}  // namespace convpool_cnn_c
