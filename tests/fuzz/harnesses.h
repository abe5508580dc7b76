#pragma once
// The fuzz harnesses: each hands arbitrary bytes to one reader of untrusted input and accepts
// exactly one outcome besides success, a normgrad::Error. Anything else (another exception, a
// crash, a sanitizer report, a broken invariant, which aborts) is a finding.
//
// They are plain functions, so that the normal test suite replays every input in
// regressions/ through them (test_fuzz_regressions.cpp), while fuzz_entry.cpp wraps each into a
// libFuzzer program (-DNORMGRAD_FUZZ=ON, scripts/fuzz).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace normgrad::fuzz {

using Harness = int (*)(const std::uint8_t* data, std::size_t size);

// The bytes as a safetensors file: load_tensors with its checksums verified.
int fuzz_safetensors(const std::uint8_t* data, std::size_t size);
// The bytes as a training state for a small model and Adam: load_training_state.
int fuzz_training_state(const std::uint8_t* data, std::size_t size);
// The bytes as an IDX file, plain or (when they start with gzip's magic) compressed.
int fuzz_idx(const std::uint8_t* data, std::size_t size);
// The bytes gzip-compressed by the harness, then read as an IDX file: the stream path.
int fuzz_idx_gzip(const std::uint8_t* data, std::size_t size);
// The bytes as an MNIST folder's test split (see mnist_folder_input for the layout).
int fuzz_mnist_folder(const std::uint8_t* data, std::size_t size);
// The bytes as a norm spec: NormSpec::parse, then the canonical string must parse to the
// same spec, and make_norm must build it.
int fuzz_norm_spec(const std::uint8_t* data, std::size_t size);

struct NamedHarness {
  const char* name;  // "safetensors": the program is fuzz_safetensors
  Harness run;
};
const std::vector<NamedHarness>& harnesses();

// The layout fuzz_mnist_folder reads: 4 bytes (little-endian) giving the length L of the
// images file, its L bytes, then the labels file (the rest).
std::string mnist_folder_input(const std::string& images, const std::string& labels);

}  // namespace normgrad::fuzz
