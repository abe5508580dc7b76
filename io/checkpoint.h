#pragma once
// Checkpoints in the safetensors format: an 8-byte little-endian header length, a JSON header
// naming each tensor's dtype ("F32", "F64", "I64", "BF16"), shape and byte range, then the raw
// little-endian data. Python's safetensors and PyTorch (safetensors.torch.load_file) open the
// files normgrad writes, and normgrad opens theirs when the dtypes are among those four.
//
//   io::save(model, "model.safetensors");    // parameters and buffers by their dotted names
//   io::load(model, "model.safetensors");    // every name present, with its shape and dtype
//
// Writing is atomic (io/atomic_file.h): the file is written beside the target under a
// temporary name, flushed to disk and renamed over the target, so a crash leaves the previous
// checkpoint whole; temporaries of killed writers are removed by the next save of the same
// file.
//
// What loading detects. Every file is checked whole before anything changes:
//   - a truncated file, a header that is not the format (bad length, not JSON, a repeated or
//     empty tensor name, an unknown dtype, a size that is negative or overflows, a shape whose
//     bytes differ from its data_offsets span, tensors that overlap, leave gaps or leave bytes
//     over), a header above 100 MB, a path that is a directory;
//   - a changed byte in any tensor's data: normgrad stores an XXH64 checksum of each tensor's
//     bytes in the header's __metadata__ ("normgrad.xxh64.<name>": 16 hex digits), which other
//     safetensors readers ignore, and verifies it on load (LoadOptions::verify_checksums);
//   - a checksum whose tensor is missing, or checksums for only some tensors.
// What it does not detect:
//   - corruption of a file written by another program, which stores no checksums (it loads
//     if its structure is sound);
//   - a change to the header that stays consistent: an edited metadata string, or tensors
//     renamed, or a dtype or shape changed together with a matching checksum;
//   - a file replaced whole by another valid checkpoint.
// A module's load also refuses names, shapes and dtypes that do not fit the module.

#include <map>
#include <string>

#include "core/tensor.h"
#include "nn/module.h"

namespace normgrad::io {

using nn::StateDict;

using Metadata = std::map<std::string, std::string>;

struct LoadOptions {
  // Hashing runs at about 20 GB/s: a 200 MB file took 21 ms to load with it and 11 ms
  // without (from the page cache). Turn it off only for files whose integrity is known.
  bool verify_checksums = true;
};

// Any named tensors (copied to the CPU and made contiguous on the way out). Metadata keys that
// start with "normgrad.xxh64." are reserved for the checksums; they are not returned on load.
// load_tensors replaces *metadata with the file's metadata.
void save_tensors(const StateDict& tensors, const std::string& path, const Metadata& metadata = {});
StateDict load_tensors(const std::string& path, Metadata* metadata = nullptr,
                       const LoadOptions& options = {});

void save(const nn::Module& module, const std::string& path, const Metadata& metadata = {});
// Strict: the file must hold exactly the module's names (see Module::load_state_dict).
void load(nn::Module& module, const std::string& path, const LoadOptions& options = {});

}  // namespace normgrad::io
