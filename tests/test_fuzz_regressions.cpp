// Every input in tests/fuzz/regressions/<harness>/ once broke a reader (or was written by hand
// as the kind of input that did): each is replayed through its harness, which must end in
// success or a normgrad::Error, never anything else. A harness without inputs fails the test,
// so that a new reader cannot join the fuzz suite without its regressions folder.

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

TEST_CASE("the hand-written regressions are refused for the reason they were written for") {
  const fs::path root(NORMGRAD_FUZZ_REGRESSIONS_DIR);
  const auto load_state = [&](const char* name) {
    manual_seed(1);
    nn::Linear model(3, 2);
    optim::Adam adam(model.parameters(), {.lr = 1e-3});
    Generator generator(1);
    optim::load_training_state((root / "training_state" / name).string(), model, adam, generator);
  };
  CHECK_ERROR(load_state("adam-steps-at-int64-max"), "load_training_state", "Adam", "steps");
  CHECK_ERROR(nn::load_tensors((root / "safetensors" / "shape-bytes-wrap-to-8").string()), "load",
              "2305843009213693953");
  CHECK_ERROR(data::read_idx((root / "idx" / "dims-wrap-to-zero").string()), "read_idx",
              "2^64 or more");
  CHECK_ERROR(nn::NormSpec::parse("rmsnorm,eps=inf"), "eps");
}
