// The CIFAR-10 reader (data/cifar10.h) on the fixture that fixtures/generate_cifar10.py
// writes, and on damaged copies of it.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "data/cifar10.h"
#include "helpers.h"
#include "scratch_folder.h"

using namespace normgrad;
namespace fs = std::filesystem;

namespace {

const std::string fixture_folder = std::string(NORMGRAD_FIXTURES_DIR) + "/cifar10";

// The fixture's rule: record r's byte for channel c, row y, column x, and its label.
int fixture_byte(std::int64_t r, std::int64_t c, std::int64_t y, std::int64_t x) {
  return static_cast<int>((31 * r + 7 * c + 3 * y + x) % 256);
}
std::int64_t fixture_label(std::int64_t r) { return (3 * r + 1) % 10; }

void check_records(const data::ImageDataset& dataset, std::int64_t count) {
  REQUIRE(dataset.images.shape() == Shape{count, 3, 32, 32});
  REQUIRE(dataset.labels.shape() == Shape{count});
  CHECK(dataset.images.dtype() == DType::Float32);
  CHECK(dataset.labels.dtype() == DType::Int64);
  const auto pixels = dataset.images.to_vector<float>();
  const auto labels = dataset.labels.to_vector<std::int64_t>();
  std::int64_t wrong = 0;
  for (std::int64_t r = 0; r < count; ++r) {
    CHECK(labels[static_cast<std::size_t>(r)] == fixture_label(r));
    for (std::int64_t c = 0; c < 3; ++c)
      for (std::int64_t y = 0; y < 32; ++y)
        for (std::int64_t x = 0; x < 32; ++x) {
          const float expected = static_cast<float>(fixture_byte(r, c, y, x)) / 255.0f;
          if (pixels[static_cast<std::size_t>(((r * 3 + c) * 32 + y) * 32 + x)] != expected)
            ++wrong;
        }
  }
  CHECK(wrong == 0);
}

// A copy of the fixture in a scratch folder, to damage.
void copy_fixture(const fs::path& to) {
  fs::create_directories(to);
  for (const auto& entry : fs::directory_iterator(fixture_folder))
    fs::copy_file(entry.path(), to / entry.path().filename());
}

}  // namespace

TEST_CASE("load_cifar10 reads the five training files in order and the test file") {
  check_records(data::load_cifar10(fixture_folder, data::Split::Train), 9);
  check_records(data::load_cifar10(fixture_folder, data::Split::Test), 3);
  CHECK(data::cifar10_files(data::Split::Train).size() == 5);
}

TEST_CASE("load_cifar10 finds the files in cifar-10-batches-bin, as the archive unpacks") {
  testing::ScratchFolder scratch("cifar10_unpacked");
  copy_fixture(scratch.path / "cifar-10-batches-bin");
  check_records(data::load_cifar10(scratch.path.string(), data::Split::Test), 3);
}

TEST_CASE("load_cifar10 refuses missing, truncated and foreign files, naming them") {
  testing::ScratchFolder scratch("cifar10_damaged");
  const fs::path folder = scratch.path / "data";
  CHECK_ERROR(data::load_cifar10(folder.string(), data::Split::Train), "load_cifar10",
              "is not a folder", "cifar-10-binary.tar.gz");
  copy_fixture(folder);

  fs::remove(folder / "data_batch_4.bin");
  CHECK_ERROR(data::load_cifar10(folder.string(), data::Split::Train), "load_cifar10",
              "data_batch_4.bin");
  fs::remove(folder / "data_batch_1.bin");
  CHECK_ERROR(data::load_cifar10(folder.string(), data::Split::Train), "load_cifar10",
              "no file 'data_batch_1.bin'", "cifar-10-batches-bin");

  // A record cut short.
  fs::resize_file(folder / "test_batch.bin", 3 * 3073 - 5);
  CHECK_ERROR(data::load_cifar10(folder.string(), data::Split::Test), "load_cifar10",
              "test_batch.bin", "9214 bytes", "3073-byte records");
  // An empty file.
  fs::resize_file(folder / "test_batch.bin", 0);
  CHECK_ERROR(data::load_cifar10(folder.string(), data::Split::Test), "load_cifar10", "0 bytes");
  // A label out of range: the second record's label byte.
  fs::copy_file(fs::path(fixture_folder) / "test_batch.bin", folder / "test_batch.bin",
                fs::copy_options::overwrite_existing);
  {
    std::fstream file(folder / "test_batch.bin", std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(3073);
    file.put(static_cast<char>(12));
  }
  CHECK_ERROR(data::load_cifar10(folder.string(), data::Split::Test), "load_cifar10",
              "test_batch.bin", "record 1 has label 12", "0 to 9");
}
