// Every input in tests/fuzz/regressions/<harness>/ once broke a reader (or was written by hand
// as the kind of input that did): each is replayed through its harness, which must end in
// success or a normgrad::Error, never anything else. A harness without inputs fails the test,
// so that a new reader cannot join the fuzz suite without its regressions folder.

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "fuzz/harnesses.h"
#include "helpers.h"

namespace fs = std::filesystem;
using namespace normgrad;

namespace {

std::string read_bytes(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("every input kept in tests/fuzz/regressions is handled by its harness") {
  const fs::path root(NORMGRAD_FUZZ_REGRESSIONS_DIR);
  int replayed = 0;
  for (const fuzz::NamedHarness& harness : fuzz::harnesses()) {
    const fs::path folder = root / harness.name;
    INFO("harness ", harness.name);
    REQUIRE(fs::is_directory(folder));
    int count = 0;
    for (const fs::directory_entry& entry : fs::directory_iterator(folder)) {
      if (!entry.is_regular_file() || entry.path().filename() == "README.md") continue;
      const std::string bytes = read_bytes(entry.path());
      INFO("input ", entry.path().filename().string());
      CHECK_NOTHROW(harness.run(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
      ++count;
    }
    CHECK(count > 0);
    replayed += count;
  }
  MESSAGE(replayed, " inputs replayed");
}

TEST_CASE("every folder in tests/fuzz/regressions belongs to a harness") {
  // A misspelt folder would be skipped by the replay above without a word.
  for (const fs::directory_entry& entry :
       fs::directory_iterator(fs::path(NORMGRAD_FUZZ_REGRESSIONS_DIR))) {
    if (!entry.is_directory()) continue;
    const std::string name = entry.path().filename().string();
    INFO("folder ", name);
    CHECK(std::any_of(fuzz::harnesses().begin(), fuzz::harnesses().end(),
                      [&](const fuzz::NamedHarness& harness) { return name == harness.name; }));
  }
}

TEST_CASE("the hand-written regressions are refused for the reason they were written for") {
  const fs::path root(NORMGRAD_FUZZ_REGRESSIONS_DIR);
  const auto load_state = [&](const char* name) {
    manual_seed(1);
    nn::Linear model(3, 2);
    optim::Adam adam(model.parameters(), {.lr = 1e-3});
    Generator generator(1);
    io::load_training_state((root / "training_state" / name).string(), model, adam, generator);
  };
  CHECK_ERROR(load_state("adam-steps-at-int64-max"), "load_training_state", "Adam", "steps");
  CHECK_ERROR(io::load_tensors((root / "safetensors" / "shape-bytes-wrap-to-8").string()), "load",
              "2305843009213693953");
  CHECK_ERROR(data::read_idx((root / "idx" / "dims-wrap-to-zero").string()), "read_idx",
              "2^64 or more");
  CHECK_ERROR(data::read_idx((root / "idx" / "claims-a-gibibyte").string()), "read_idx");
  CHECK_ERROR(nn::NormSpec::parse("rmsnorm,eps=inf"), "eps", "finite");
  CHECK_ERROR(nn::NormSpec::parse("layernorm,eps=nan"), "eps", "finite");

  // The MNIST folder's test images claim 2^32-1 x 2^32-1 pixels per image, with no images.
  const std::string input = read_bytes(root / "mnist_folder" / "pixel-count-overflow");
  const fs::path folder = fs::temp_directory_path() / ("normgrad-mnist-regression-" +
                                                        std::to_string(::getpid()));
  fs::create_directories(folder);
  std::size_t offset = 12;
  for (std::size_t i = 0; i < 4; ++i) {
    std::uint32_t length = 0;
    if (i < 3) std::memcpy(&length, input.data() + 4 * i, 4);  // little-endian, as the layout says
    const std::size_t take = i < 3 ? length : input.size() - offset;
    std::ofstream(folder / fuzz::kMnistFolderFiles[i], std::ios::binary)
        << input.substr(offset, take);
    offset += take;
  }
  CHECK_ERROR(data::load_mnist(folder.string(), data::Split::Test), "load_mnist",
              "t10k-images-idx3-ubyte", "4294967295 x 4294967295");
  fs::remove_all(folder);
}
