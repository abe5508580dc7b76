#pragma once
// Checkpoints in the safetensors format: an 8-byte little-endian header length, a JSON header
// naming each tensor's dtype ("F32", "F64", "I64"), shape and byte range, then the raw
// little-endian data. Python's safetensors and PyTorch (safetensors.torch.load_file) open the
// files normgrad writes, and normgrad opens theirs when the dtypes are among those three.
//
//   nn::save(model, "model.safetensors");    // parameters and buffers by their dotted names
//   nn::load(model, "model.safetensors");    // every name present, with its shape and dtype
//
// Writing is atomic: the file is written beside the target under a temporary name, flushed
// to disk (fsync) and renamed over the target, so a crash leaves the previous checkpoint
// whole. Loading checks everything before it changes anything: a truncated or corrupted file,
// or one whose names, shapes or dtypes do not fit the module, is refused with an Error that
// says what is wrong and where.

#include <map>
#include <string>

#include "core/tensor.h"
#include "nn/module.h"

namespace normgrad::nn {

using Metadata = std::map<std::string, std::string>;

// Any named tensors (copied to the CPU and made contiguous on the way out).
void save_tensors(const StateDict& tensors, const std::string& path, const Metadata& metadata = {});
StateDict load_tensors(const std::string& path, Metadata* metadata = nullptr);

void save(const Module& module, const std::string& path, const Metadata& metadata = {});
// Strict: the file must hold exactly the module's names (see Module::load_state_dict).
void load(Module& module, const std::string& path);

}  // namespace normgrad::nn
