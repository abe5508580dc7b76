#pragma once
// The fuzz harnesses: each hands arbitrary bytes to one reader of untrusted input and accepts
// exactly one outcome besides success, a normgrad::Error. Anything else (another exception, a
// crash, a sanitizer report, a broken invariant, which aborts) is a finding.
//
// Each is a plain function in its own file, fuzz_<reader>.cpp, so that the normal test suite
// replays every input in regressions/ through them (test_fuzz_regressions.cpp), while
// fuzz_entry.cpp wraps each into a libFuzzer program (-DNORMGRAD_FUZZ=ON, scripts/fuzz).

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace normgrad::fuzz {

using Harness = int (*)(const std::uint8_t* data, std::size_t size);

// The bytes as a safetensors file: io::load_tensors with its checksums verified, and io::load
// into a Linear(3, 2).
int fuzz_safetensors(const std::uint8_t* data, std::size_t size);
// The bytes as a training state for a Linear(3, 2) and Adam: io::load_training_state.
int fuzz_training_state(const std::uint8_t* data, std::size_t size);
// The bytes as an IDX file, plain or (when they start with gzip's magic) compressed.
int fuzz_idx(const std::uint8_t* data, std::size_t size);
// The bytes gzip-compressed by the harness, then read as an IDX file: the stream path.
int fuzz_idx_gzip(const std::uint8_t* data, std::size_t size);
// The bytes as an MNIST folder's four files (layout: mnist_folder_input), both splits loaded.
int fuzz_mnist_folder(const std::uint8_t* data, std::size_t size);
// The bytes as a norm spec: NormSpec::parse, then the canonical string must parse to the
// same spec, and make_norm must build it.
int fuzz_norm_spec(const std::uint8_t* data, std::size_t size);
// The bytes as a .npy file: data::read_npy, and a tensor it returns written back and read again.
int fuzz_npy(const std::uint8_t* data, std::size_t size);

struct NamedHarness {
  const char* name;  // "safetensors": the program is fuzz_safetensors
  Harness run;
};
const std::vector<NamedHarness>& harnesses();

// The four files of an MNIST folder, in the order fuzz_mnist_folder's input holds them.
inline constexpr std::array<const char*, 4> kMnistFolderFiles = {
    "train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte"};

// fuzz_mnist_folder's input for these four files (in kMnistFolderFiles' order): the lengths
// of the first three as 4-byte little-endian numbers, then the four files one after another
// (the last takes the rest). Lengths past the end are cut short, so every input is a folder.
std::string mnist_folder_input(const std::array<std::string, 4>& files);

}  // namespace normgrad::fuzz
