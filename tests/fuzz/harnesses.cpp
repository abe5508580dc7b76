#include "harnesses.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <normgrad/normgrad.h>

namespace normgrad::fuzz {

namespace {

namespace fs = std::filesystem;

// A private folder for this process's input files, removed at exit.
const fs::path& scratch() {
  static const fs::path folder = [] {
    fs::path path = fs::temp_directory_path() / ("normgrad-fuzz-" + std::to_string(::getpid()));
    fs::create_directories(path);
    std::atexit([] {
      std::error_code ignored;
      fs::remove_all(fs::temp_directory_path() / ("normgrad-fuzz-" + std::to_string(::getpid())),
                     ignored);
    });
    return path;
  }();
  return folder;
}

std::string write_file(const std::string& name, const void* data, std::size_t size) {
  const fs::path path = scratch() / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) {
    std::fprintf(stderr, "fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
  return path.string();
}

// Runs `body`, accepting normgrad::Error as the only failure.
template <typename Body> int expect_success_or_error(Body&& body) {
  try {
    body();
  } catch (const Error&) {
  }
  return 0;
}

// An invariant that must hold: a failure aborts, which the fuzzer reports with its input.
void require(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "fuzz: invariant broken: %s\n", what);
    std::abort();
  }
}

}  // namespace

int fuzz_safetensors(const std::uint8_t* data, std::size_t size) {
  const std::string path = write_file("input.safetensors", data, size);
  return expect_success_or_error([&] {
    nn::Metadata metadata;
    const nn::StateDict tensors = nn::load_tensors(path, &metadata);
    for (const auto& [name, tensor] : tensors) require(!name.empty(), "a loaded name is empty");
  });
}

int fuzz_training_state(const std::uint8_t* data, std::size_t size) {
  const std::string path = write_file("input.safetensors", data, size);
  return expect_success_or_error([&] {
    manual_seed(1);
    nn::Linear model(3, 2);
    optim::Adam adam(model.parameters(), {.lr = 1e-3});
    Generator generator(1);
    optim::load_training_state(path, model, adam, generator);
    // A state that loads must also train: one step with what was loaded.
    model.forward(ones({2, 3})).sum().backward();
    adam.step();
  });
}

int fuzz_idx(const std::uint8_t* data, std::size_t size) {
  const std::string path = write_file("input-idx-ubyte", data, size);
  return expect_success_or_error([&] {
    const data::IdxArray array = data::read_idx(path);
    require(static_cast<std::uint64_t>(numel(array.shape)) == array.values.size(),
            "an IDX array's values do not fill its shape");
  });
}

int fuzz_idx_gzip(const std::uint8_t* data, std::size_t size) {
  const fs::path path = scratch() / "input-idx-ubyte.gz";
  gzFile file = gzopen(path.c_str(), "wb1");
  require(file != nullptr, "cannot create the compressed input");
  if (size > 0) require(gzwrite(file, data, static_cast<unsigned>(size)) > 0, "cannot compress");
  gzclose(file);
  return expect_success_or_error([&] {
    const data::IdxArray array = data::read_idx(path.string());
    require(static_cast<std::uint64_t>(numel(array.shape)) == array.values.size(),
            "an IDX array's values do not fill its shape");
  });
}

std::string mnist_folder_input(const std::string& images, const std::string& labels) {
  const std::uint32_t length = static_cast<std::uint32_t>(images.size());
  std::string bytes(4, '\0');
  std::memcpy(bytes.data(), &length, 4);
  return bytes + images + labels;
}

int fuzz_mnist_folder(const std::uint8_t* data, std::size_t size) {
  std::uint32_t length = 0;
  if (size >= 4) std::memcpy(&length, data, 4);
  const std::size_t rest = size >= 4 ? size - 4 : 0;
  const std::size_t images = std::min<std::size_t>(length, rest);
  const std::uint8_t* start = data + (size >= 4 ? 4 : size);
  write_file("t10k-images-idx3-ubyte", start, images);
  write_file("t10k-labels-idx1-ubyte", start + images, rest - images);
  return expect_success_or_error([&] {
    const data::ImageDataset set = data::load_mnist(scratch().string(), data::Split::Test);
    require(set.images.size(0) == set.labels.size(0), "images and labels differ in number");
  });
}

int fuzz_norm_spec(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  return expect_success_or_error([&] {
    const nn::NormSpec spec = nn::NormSpec::parse(text);
    const std::string canonical = spec.str();
    require(nn::NormSpec::parse(canonical).str() == canonical,
            "a spec's canonical string does not parse back to it");
    nn::make_norm(spec, 8);
  });
}

const std::vector<NamedHarness>& harnesses() {
  static const std::vector<NamedHarness> all = {
      {"safetensors", fuzz_safetensors}, {"training_state", fuzz_training_state},
      {"idx", fuzz_idx},                 {"idx_gzip", fuzz_idx_gzip},
      {"mnist_folder", fuzz_mnist_folder}, {"norm_spec", fuzz_norm_spec}};
  return all;
}

}  // namespace normgrad::fuzz
