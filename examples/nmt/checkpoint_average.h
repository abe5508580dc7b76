#pragma once
// Checkpoint averaging: the element-wise mean of the model weights in the last few training
// states of a run, a standard last step of Transformer training (Vaswani et al. 2017 average
// the last 5 or 20 checkpoints; fairseq's scripts/average_checkpoints.py, Marian's
// --exponential-smoothing is its running cousin). Averaged weights are often a little better
// than any single checkpoint's, since late Adam steps oscillate around a minimum.

#include <normgrad/normgrad.h>

#include <string>
#include <vector>

namespace nmt {

// The mean of the "model.*" tensors of training states (io::save_training_state's files),
// computed in float64 and returned in each tensor's dtype, with the prefix removed: a state
// dict for Module::load_state_dict. An Error naming the first file that is missing, holds no
// model, or whose tensor names, shapes or dtypes differ from the first file's. Buffers average
// as parameters do; integer tensors must be equal in every file and are taken as they are.
normgrad::nn::StateDict average_model_weights(const std::vector<std::string>& training_states,
                                              const std::string& program);

}  // namespace nmt
