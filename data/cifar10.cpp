#include "data/cifar10.h"

#include <filesystem>
#include <fstream>

#include "base/error.h"

namespace normgrad::data {

namespace {

namespace fs = std::filesystem;

constexpr const char* download_hint =
    " (CIFAR-10's binary version: cifar-10-binary.tar.gz from "
    "https://www.cs.toronto.edu/~kriz/cifar.html)";

// The folder that holds the split's first file: `folder` itself or its cifar-10-batches-bin.
fs::path data_folder(const std::string& folder, Split split) {
  NG_CHECK(fs::is_directory(folder), "load_cifar10", "'", folder, "' is not a folder",
           download_hint);
  const std::string first = cifar10_files(split).front();
  for (const fs::path& candidate : {fs::path(folder), fs::path(folder) / "cifar-10-batches-bin"})
    if (fs::exists(candidate / first)) return candidate;
  NG_CHECK(false, "load_cifar10", "no file '", first, "' in '", folder,
           "' or in its cifar-10-batches-bin", download_hint);
  return {};
}

// The file's bytes, checked to be whole records.
std::vector<unsigned char> read_records(const fs::path& path) {
  NG_CHECK(fs::is_regular_file(path), "load_cifar10", "no file '", path.string(), "'",
           download_hint);
  const auto size = static_cast<std::int64_t>(fs::file_size(path));
  NG_CHECK(size > 0 && size % kCifar10RecordBytes == 0, "load_cifar10", "'", path.string(),
           "' has ", size, " bytes, not a whole number of ", kCifar10RecordBytes,
           "-byte records (a label byte and ", kCifar10ImageBytes,
           " pixel bytes): truncated, or not CIFAR-10's binary version");
  std::vector<unsigned char> bytes(static_cast<std::size_t>(size));
  std::ifstream file(path, std::ios::binary);
  file.read(reinterpret_cast<char*>(bytes.data()), size);
  NG_CHECK(file.gcount() == size, "load_cifar10", "could not read '", path.string(), "'");
  for (std::int64_t record = 0; record < size / kCifar10RecordBytes; ++record) {
    const int label = bytes[static_cast<std::size_t>(record * kCifar10RecordBytes)];
    NG_CHECK(label < 10, "load_cifar10", "'", path.string(), "': record ", record, " has label ",
             label, "; CIFAR-10's labels are 0 to 9 (CIFAR-100's files have two label bytes)");
  }
  return bytes;
}

}  // namespace

std::vector<std::string> cifar10_files(Split split) {
  if (split == Split::Test) return {"test_batch.bin"};
  return {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
          "data_batch_5.bin"};
}

ImageDataset load_cifar10(const std::string& folder, Split split) {
  const fs::path where = data_folder(folder, split);
  std::vector<std::vector<unsigned char>> files;
  std::int64_t count = 0;
  for (const std::string& name : cifar10_files(split)) {
    files.push_back(read_records(where / name));
    count += static_cast<std::int64_t>(files.back().size()) / kCifar10RecordBytes;
  }
  Tensor images = empty({count, 3, kCifar10Side, kCifar10Side});
  Tensor labels = empty({count}, {.dtype = DType::Int64});
  float* pixels = images.data_ptr<float>();
  std::int64_t* label_values = labels.data_ptr<std::int64_t>();
  for (const auto& bytes : files) {
    for (std::size_t at = 0; at < bytes.size(); at += kCifar10RecordBytes) {
      *label_values++ = bytes[at];
      for (std::int64_t i = 1; i <= kCifar10ImageBytes; ++i)
        *pixels++ = static_cast<float>(bytes[at + static_cast<std::size_t>(i)]) / 255.0f;
    }
  }
  return {images, labels};
}

}  // namespace normgrad::data
