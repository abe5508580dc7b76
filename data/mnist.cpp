#include "data/mnist.h"

#include <cstdlib>
#include <filesystem>

#include "base/checked.h"
#include "base/error.h"
#include "data/idx.h"

namespace normgrad::data {

namespace {

// 2^31 pixels: far above any image in an MNIST-format set, far below what overflows.
constexpr std::int64_t max_image_pixels = std::int64_t{1} << 31;

// The file with this stem, compressed or not.
std::string find_file(const std::string& folder, const std::string& stem) {
  for (const char* suffix : {".gz", ""}) {
    const std::filesystem::path path = std::filesystem::path(folder) / (stem + suffix);
    if (std::filesystem::exists(path)) return path.string();
  }
  NG_CHECK(false, "load_mnist", "no file '", stem, "' or '", stem, ".gz' in '", folder,
           "' (Fashion-MNIST: apt-get install dataset-fashion-mnist)");
  return "";
}

}  // namespace

std::string fashion_mnist_folder() {
  const char* named = std::getenv("NORMGRAD_FASHION_MNIST");
  return named != nullptr && *named != '\0' ? named : kFashionMnistFolder;
}

ImageDataset load_mnist(const std::string& folder, Split split) {
  const std::string prefix = split == Split::Train ? "train" : "t10k";
  const std::string image_path = find_file(folder, prefix + "-images-idx3-ubyte");
  const std::string label_path = find_file(folder, prefix + "-labels-idx1-ubyte");
  const IdxArray images = read_idx(image_path);
  const IdxArray labels = read_idx(label_path);
  NG_CHECK(images.shape.size() == 3, "load_mnist", "'", image_path,
           "' should hold images [N, rows, columns], got dims ", images.shape);
  NG_CHECK(labels.shape.size() == 1 && labels.shape[0] == images.shape[0], "load_mnist", "'",
           label_path, "' holds dims ", labels.shape, ", but '", image_path, "' has ",
           images.shape[0], " images");
  // The file's size bounds N × rows × columns, but not rows × columns when N is 0.
  const std::int64_t count = images.shape[0];
  std::int64_t pixels = 0;
  NG_CHECK(multiply_fits(images.shape[1], images.shape[2], pixels) && pixels <= max_image_pixels,
           "load_mnist", "'", image_path, "': images of ", images.shape[1], " x ", images.shape[2],
           " pixels are larger than the ", max_image_pixels, " pixels allowed");
  // The tensors are filled in place, and an allocation the machine cannot make is an Error
  // naming the file (the factories turn std::bad_alloc into one).
  Tensor image_tensor, label_tensor;
  try {
    image_tensor = empty({count, pixels});
    label_tensor = empty({count}, {.dtype = DType::Int64});
  } catch (const Error& error) {
    NG_CHECK(false, "load_mnist", "'", image_path, "': ", error.what());
  }
  float* image_values = image_tensor.data_ptr<float>();
  for (std::size_t i = 0; i < images.values.size(); ++i)
    image_values[i] = static_cast<float>(images.values[i]) / 255.0f;
  std::int64_t* label_values = label_tensor.data_ptr<std::int64_t>();
  for (std::size_t i = 0; i < labels.values.size(); ++i) {
    label_values[i] = labels.values[i];
    NG_CHECK(label_values[i] < 10, "load_mnist", "'", label_path, "': label ", label_values[i],
             " of image ", i, " is not a class in [0, 10)");
  }
  return {image_tensor, label_tensor};
}

}  // namespace normgrad::data
