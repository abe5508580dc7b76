// data/: IDX files (gzip or plain) written and read back, refused when broken; the MNIST
// loader; and the DataLoader's batches and seeded shuffle.

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "helpers.h"

using namespace normgrad;
using testing::all_close;
namespace fs = std::filesystem;

namespace {

struct Folder {
  fs::path path = fs::temp_directory_path() / ("normgrad-data-" + std::to_string(::getpid()));
  Folder() { fs::create_directories(path); }
  ~Folder() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

data::IdxArray images(std::int64_t count) {
  data::IdxArray array{{count, 2, 3}, {}};
  for (std::int64_t i = 0; i < count * 6; ++i)
    array.values.push_back(static_cast<std::uint8_t>(i * 7 % 256));
  return array;
}

}  // namespace

TEST_CASE("IDX files round-trip, compressed or not") {
  Folder folder;
  const data::IdxArray array = images(4);
  for (const char* name : {"a.idx", "a.idx.gz"}) {
    CAPTURE(name);
    data::write_idx(folder.file(name), array);
    const data::IdxArray back = data::read_idx(folder.file(name));
    CHECK(back.shape == array.shape);
    CHECK(back.values == array.values);
  }
  CHECK(fs::file_size(folder.file("a.idx")) == 4 + 3 * 4 + 24);
}

TEST_CASE("broken IDX files are refused with a message that names the problem") {
  Folder folder;
  data::write_idx(folder.file("good.idx"), images(4));
  std::ifstream in(folder.file("good.idx"), std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const auto write = [&](const std::string& content) {
    std::ofstream(folder.file("bad.idx"), std::ios::binary) << content;
    return folder.file("bad.idx");
  };
  CHECK_ERROR(data::read_idx(write(bytes.substr(0, bytes.size() - 5))), "read_idx", "truncated",
              "24 values", "only 19 bytes follow the header");
  CHECK_ERROR(data::read_idx(write(bytes.substr(0, 2))), "read_idx", "truncated", "magic number");
  std::string magic = bytes;
  magic[0] = 'P';
  CHECK_ERROR(data::read_idx(write(magic)), "read_idx", "not an IDX file");
  std::string type = bytes;
  type[2] = 0x0d;  // float32 values
  CHECK_ERROR(data::read_idx(write(type)), "read_idx", "type 0xd", "unsigned bytes");
  CHECK_ERROR(data::read_idx(write(bytes + "x")), "read_idx", "bytes after the 24 values");
  CHECK_ERROR(data::read_idx(folder.file("none.idx")), "read_idx", "cannot open", "none.idx");
  CHECK_ERROR(data::write_idx(folder.file("x.idx"), {{2, 2}, {1, 2, 3}}), "write_idx", "4 values");
}

TEST_CASE("load_mnist reads an MNIST-format folder and checks it") {
  Folder folder;
  data::write_idx(folder.file("train-images-idx3-ubyte.gz"), images(3));
  data::write_idx(folder.file("train-labels-idx1-ubyte"), {{3}, {7, 0, 9}});
  const data::ImageDataset train = data::load_mnist(folder.path.string(), data::Split::Train);
  CHECK(train.images.shape() == Shape{3, 6});
  CHECK(train.images.dtype() == DType::Float32);
  CHECK(train.images.select(0, 1).select(0, 0).item() == doctest::Approx(42.0 / 255.0));
  CHECK(all_close(train.labels, {7, 0, 9}, 0, 0));
  CHECK_ERROR(data::load_mnist(folder.path.string(), data::Split::Test), "load_mnist",
              "t10k-images-idx3-ubyte", "dataset-fashion-mnist");
  data::write_idx(folder.file("train-labels-idx1-ubyte"), {{2}, {7, 0}});
  CHECK_ERROR(data::load_mnist(folder.path.string(), data::Split::Train), "load_mnist", "3 images");
  data::write_idx(folder.file("train-labels-idx1-ubyte"), {{3}, {7, 10, 9}});
  CHECK_ERROR(data::load_mnist(folder.path.string(), data::Split::Train), "load_mnist", "label 10",
              "image 1");
}

TEST_CASE("fashion_mnist_folder: NORMGRAD_FASHION_MNIST names another copy, else Debian's folder") {
  const char* before = std::getenv("NORMGRAD_FASHION_MNIST");
  const bool was_set = before != nullptr;
  const std::string saved = was_set ? before : "";
  ::setenv("NORMGRAD_FASHION_MNIST", "/data/fashion", 1);
  CHECK(data::fashion_mnist_folder() == "/data/fashion");
  ::setenv("NORMGRAD_FASHION_MNIST", "", 1);  // set but empty: the default
  CHECK(data::fashion_mnist_folder() == data::kFashionMnistFolder);
  ::unsetenv("NORMGRAD_FASHION_MNIST");
  CHECK(data::fashion_mnist_folder() == data::kFashionMnistFolder);
  if (was_set) ::setenv("NORMGRAD_FASHION_MNIST", saved.c_str(), 1);
}

TEST_CASE("Fashion-MNIST from Debian's package has 60000 + 10000 images of 28 x 28") {
  if (!fs::exists(data::fashion_mnist_folder())) {
    MESSAGE(
        "skipped: "
        << data::fashion_mnist_folder()
        << " is missing (apt-get install dataset-fashion-mnist, or set NORMGRAD_FASHION_MNIST)");
    return;
  }
  const auto test = data::load_mnist(data::fashion_mnist_folder(), data::Split::Test);
  CHECK(test.images.shape() == Shape{10000, 784});
  CHECK(test.labels.max().item() == 9);
  CHECK(test.images.max().item() <= 1.0);
  // Ten classes of 1000 test images each.
  CHECK(eq(test.labels, 3.0).sum().item() == 1000);
}

TEST_CASE("DataLoader: every example once per epoch, a new seeded order each epoch") {
  const Tensor inputs =
      arange(0, 10).to(DType::Float64).unsqueeze(1) * ones({1, 2}, {.dtype = DType::Float64});
  const Tensor targets = arange(0, 10).to(DType::Int64);
  data::DataLoader loader(inputs, targets, {.batch_size = 4, .seed = 3});
  CHECK(loader.batches_per_epoch() == 3);
  std::vector<std::int64_t> first_order;
  for (const auto& [x, y] : loader.epoch()) {
    CHECK(x.size(0) == y.size(0));
    CHECK(all_close(x.select(1, 0), y.to(DType::Float64), 0, 0));  // pairs stay together
    for (std::int64_t v : y.to_vector<std::int64_t>()) first_order.push_back(v);
  }
  CHECK(std::set<std::int64_t>(first_order.begin(), first_order.end()).size() == 10);
  std::vector<std::int64_t> second_order;
  for (const auto& [x, y] : loader.epoch())
    for (std::int64_t v : y.to_vector<std::int64_t>()) second_order.push_back(v);
  CHECK(second_order != first_order);
  // The same seed gives the same batches.
  data::DataLoader again(inputs, targets, {.batch_size = 4, .seed = 3});
  std::vector<std::int64_t> replay;
  for (const auto& [x, y] : again.epoch())
    for (std::int64_t v : y.to_vector<std::int64_t>()) replay.push_back(v);
  CHECK(replay == first_order);
  data::DataLoader ordered(inputs, targets, {.batch_size = 4, .shuffle = false, .drop_last = true});
  const data::Epoch epoch = ordered.epoch();
  CHECK(epoch.size() == 2);
  CHECK(all_close(epoch[1].second, {4, 5, 6, 7}, 0, 0));
  CHECK_ERROR(epoch[2], "Epoch", "batch 2");
  CHECK_ERROR(data::DataLoader(inputs, targets.narrow(0, 0, 9)), "DataLoader", "[10, 2]", "[9]");
  CHECK_ERROR(data::DataLoader(inputs, targets, {.batch_size = 0}), "DataLoader", "batch_size");
}

TEST_CASE("DataLoader: shards split each epoch's batches, none shared, as many each") {
  const Tensor inputs = arange(0, 10).to(DType::Float64).unsqueeze(1);
  const Tensor targets = arange(0, 10).to(DType::Int64);
  // 10 examples in batches of 3: 4 batches, 2 per shard; the same seed on both shards.
  std::vector<std::int64_t> seen;
  std::vector<std::int64_t> whole;
  data::DataLoader unsharded(inputs, targets, {.batch_size = 3, .seed = 9});
  for (const auto& [x, y] : unsharded.epoch())
    for (std::int64_t v : y.to_vector<std::int64_t>()) whole.push_back(v);
  for (const std::int64_t index : {0, 1}) {
    data::DataLoader loader(inputs, targets,
                            {.batch_size = 3, .seed = 9, .shard = {.count = 2, .index = index}});
    CHECK(loader.batches_per_epoch() == 2);
    const data::Epoch epoch = loader.epoch();
    REQUIRE(epoch.size() == 2);
    // Shard k takes batches k and k + 2 of the unsharded epoch.
    for (std::size_t i = 0; i < epoch.size(); ++i) {
      const std::vector<std::int64_t> batch = epoch[i].second.to_vector<std::int64_t>();
      const auto first = static_cast<std::ptrdiff_t>(3 * (index + 2 * static_cast<int>(i)));
      CHECK(batch == std::vector<std::int64_t>(
                         whole.begin() + first,
                         whole.begin() + std::min<std::ptrdiff_t>(first + 3, std::ssize(whole))));
      seen.insert(seen.end(), batch.begin(), batch.end());
    }
  }
  CHECK(std::set<std::int64_t>(seen.begin(), seen.end()).size() == seen.size());
  CHECK(seen.size() == 10);  // batches 0 to 3: 3 + 3 + 3 + 1 images
  CHECK_ERROR(data::DataLoader(inputs, targets, {.shard = {.count = 0}}), "DataLoader",
              "shard 0 of 0");
  data::DataLoader too_few(inputs, targets, {.batch_size = 10, .shard = {.count = 3, .index = 1}});
  CHECK_ERROR(too_few.epoch(), "DataLoader", "an epoch has 1 batches, fewer than the 3 shards");
}
