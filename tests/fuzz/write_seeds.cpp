// fuzz_seeds FOLDER: writes a starting corpus for every harness into FOLDER/<harness>/, made
// by normgrad's own writers, so that the fuzzer begins from well-formed files and mutates
// them into every kind of broken one.

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <normgrad/normgrad.h>

#include "harnesses.h"

using namespace normgrad;
namespace fs = std::filesystem;

namespace {

std::string read_bytes(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

data::IdxArray small_images(std::int64_t count, std::int64_t side) {
  data::IdxArray array{{count, side, side}, {}};
  for (std::int64_t i = 0; i < count * side * side; ++i)
    array.values.push_back(static_cast<std::uint8_t>(i * 37 % 256));
  return array;
}

void safetensors_seeds(const fs::path& folder) {
  io::save_tensors({{"weight", randn({3, 4})},
                    {"double", full({2}, 0.5, {.dtype = DType::Float64})},
                    {"index", arange(0, 5, 1, {.dtype = DType::Int64})},
                    {"empty", zeros({0, 3})},
                    {"scalar", full({}, 2.0)}},
                   (folder / "tensors.safetensors").string(), {{"note", "seed"}});
  nn::Linear layer(3, 2);  // what fuzz_safetensors loads into
  io::save(layer, (folder / "linear.safetensors").string());
}

void training_state_seeds(const fs::path& folder) {
  manual_seed(1);
  nn::Linear model(3, 2);  // the harness's model
  optim::Adam adam(model.parameters(), {.lr = 1e-3});
  model.forward(randn({4, 3})).square().sum().backward();
  adam.step();
  Generator generator(7);
  io::save_training_state((folder / "state.safetensors").string(), model, adam, generator, 1);
}

// IDX files written by data::write_idx, plain and compressed, for the two IDX harnesses, and
// an MNIST folder's four files for fuzz_mnist_folder.
void idx_seeds(const fs::path& root, const fs::path& scratch) {
  const data::IdxArray images = small_images(3, 4);
  const data::IdxArray labels{{3}, {1, 7, 9}};
  const data::IdxArray train_images = small_images(5, 2);
  const data::IdxArray train_labels{{5}, {0, 1, 2, 3, 9}};
  const auto written = [&](const data::IdxArray& array, const char* name) {
    data::write_idx((scratch / name).string(), array);
    return read_bytes(scratch / name);
  };
  const std::string image_bytes = written(images, "images"),
                    label_bytes = written(labels, "labels");
  write_bytes(root / "idx" / "images-idx3-ubyte", image_bytes);
  write_bytes(root / "idx" / "labels-idx1-ubyte", label_bytes);
  write_bytes(root / "idx" / "images-idx3-ubyte.gz", written(images, "images.gz"));
  write_bytes(root / "idx_gzip" / "images-idx3-ubyte", image_bytes);
  write_bytes(root / "idx_gzip" / "labels-idx1-ubyte", label_bytes);
  write_bytes(root / "mnist_folder" / "both-splits",
              fuzz::mnist_folder_input({written(train_images, "train-images"),
                                        written(train_labels, "train-labels"), image_bytes,
                                        label_bytes}));
}

void norm_spec_seeds(const fs::path& folder) {
  // Every kind and every option of the grammar in nn/norms/factory.h.
  const char* specs[] = {"none",
                         "layernorm",
                         "layernorm,eps=1e-5",
                         "rmsnorm",
                         "prmsnorm:0.0625",
                         "prmsnorm:0.125,rounding=floor",
                         "rmsnorm,eps=1e-8,placement=outside",
                         "l2norm,bias=on",
                         "batchnorm,bias=off",
                         "weightnorm",
                         " layernorm , eps=1e-5 , bias=off "};
  int i = 0;
  for (const char* spec : specs) {
    nn::NormSpec::parse(spec);  // a seed the grammar refuses would start the fuzzer off track
    write_bytes(folder / ("spec-" + std::to_string(i++)), spec);
  }
}

// Feature matrices written by data::write_npy: 2-d, 1-d, 0-d and empty.
void npy_seeds(const fs::path& folder) {
  Generator generator(3);
  data::write_npy((folder / "features.npy").string(), randn({3, 8}, generator));
  data::write_npy((folder / "vector.npy").string(), randn({5}, generator));
  data::write_npy((folder / "scalar.npy").string(), full({}, 2.5));
  data::write_npy((folder / "empty.npy").string(), zeros({0, 4}));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_seeds FOLDER\n");
    return 2;
  }
  const fs::path root(argv[1]);
  try {
    for (const fuzz::NamedHarness& harness : fuzz::harnesses())
      fs::create_directories(root / harness.name);
    const fs::path scratch = root / ".scratch";
    fs::create_directories(scratch);
    safetensors_seeds(root / "safetensors");
    training_state_seeds(root / "training_state");
    idx_seeds(root, scratch);
    norm_spec_seeds(root / "norm_spec");
    npy_seeds(root / "npy");
    fs::remove_all(scratch);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "fuzz_seeds: %s\n", error.what());
    return 1;
  }
  return 0;
}
