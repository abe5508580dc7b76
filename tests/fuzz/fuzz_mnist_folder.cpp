// The bytes as an MNIST folder: split into its four IDX files (layout in harnesses.h), then
// both splits loaded with data::load_mnist, each on its own so that a refused training split
// does not hide the test split.

#include <algorithm>
#include <array>

#include "harness_support.h"
#include "harnesses.h"

namespace normgrad::fuzz {

namespace {

void load_split(const std::string& folder, data::Split split) {
  accept_errors([&] {
    const data::ImageDataset set = data::load_mnist(folder, split);
    require(set.images.dim() == 2 && set.labels.dim() == 1, "an MNIST split's ranks are wrong");
    require(set.images.size(0) == set.labels.size(0), "images and labels differ in number");
  });
}

}  // namespace

std::string mnist_folder_input(const std::array<std::string, 4>& files) {
  std::string bytes;
  for (std::size_t i = 0; i < 3; ++i) {
    const auto length = static_cast<std::uint32_t>(files[i].size());
    for (int byte = 0; byte < 4; ++byte) bytes += static_cast<char>((length >> (8 * byte)) & 0xff);
  }
  for (const std::string& file : files) bytes += file;
  return bytes;
}

int fuzz_mnist_folder(const std::uint8_t* data, std::size_t size) {
  std::size_t offset = 0;
  const auto take = [&](std::size_t wanted) {
    const std::size_t length = std::min(wanted, size - offset);
    const std::uint8_t* start = data + offset;
    offset += length;
    return std::make_pair(start, length);
  };
  std::array<std::size_t, 3> lengths{};
  for (std::size_t& length : lengths) {
    const auto [field, got] = take(4);
    length = 0;
    for (std::size_t byte = 0; byte < got; ++byte) length |= std::size_t{field[byte]} << (8 * byte);
  }
  for (std::size_t i = 0; i < 4; ++i) {
    const auto [start, length] = take(i < 3 ? lengths[i] : size);
    write_scratch_file(kMnistFolderFiles[i], start, length);
  }
  load_split(scratch_folder(), data::Split::Train);
  load_split(scratch_folder(), data::Split::Test);
  return 0;
}

}  // namespace normgrad::fuzz
