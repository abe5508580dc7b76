#include "data.h"

namespace convpool_cnn_c {

namespace ng = normgrad;
using ng::Tensor;

namespace {

constexpr std::int64_t side = 32, mnist_side = 28;

// The first `count` images and labels (all with 0), checked against what the split has.
ng::data::ImageDataset first(const ng::data::ImageDataset& dataset, std::int64_t count,
                             const char* split, const char* flag) {
  const std::int64_t available = dataset.images.size(0);
  NG_CHECK(count >= 0 && count <= available, "convpool_cnn_c", flag, " ", count, ": the ", split,
           " split has ", available, " images");
  if (count == 0 || count == available) return dataset;
  return {dataset.images.narrow(0, 0, count).contiguous(),
          dataset.labels.narrow(0, 0, count).contiguous()};
}

}  // namespace

DatasetKind parse_dataset(std::string_view name) {
  if (name == "fashion-mnist") return DatasetKind::FashionMnist;
  if (name == "cifar10") return DatasetKind::Cifar10;
  NG_CHECK(false, "convpool_cnn_c", "unknown dataset '", name, "': use fashion-mnist or cifar10");
  return DatasetKind::FashionMnist;
}

std::string dataset_name(DatasetKind kind) {
  return kind == DatasetKind::Cifar10 ? "cifar10" : "fashion-mnist";
}

std::string default_data_folder(DatasetKind kind) {
  return kind == DatasetKind::FashionMnist ? ng::data::fashion_mnist_folder() : "";
}

std::int64_t image_channels(DatasetKind kind) { return kind == DatasetKind::Cifar10 ? 3 : 1; }

Tensor scale_pixels(const Tensor& unit_pixels) { return (unit_pixels * 255.0 - 127.5) / 128.0; }

Tensor frame_images(const Tensor& flat_images) {
  NG_CHECK(flat_images.dim() == 2 && flat_images.size(1) == mnist_side * mnist_side,
           "convpool_cnn_c", "expects Fashion-MNIST images [N, 784], got shape ",
           flat_images.shape());
  const std::int64_t n = flat_images.size(0), margin = (side - mnist_side) / 2;
  Tensor framed = ng::zeros({n, 1, side, side}, {.dtype = flat_images.dtype()});
  framed.narrow(2, margin, mnist_side)
      .narrow(3, margin, mnist_side)
      .copy_(flat_images.reshape({n, 1, mnist_side, mnist_side}));
  return framed;
}

PreparedData prepare_data(const DataSettings& settings,
                          std::optional<ng::data::ZcaWhitening> whitening) {
  ng::NoGradGuard no_grad;
  std::string folder =
      settings.folder.empty() ? default_data_folder(settings.kind) : settings.folder;
  NG_CHECK(!folder.empty(), "convpool_cnn_c", "--dataset ", dataset_name(settings.kind),
           " needs --data: the folder of CIFAR-10's binary version (cifar-10-batches-bin)");
  const auto load = [&](ng::data::Split split) {
    if (settings.kind == DatasetKind::Cifar10) return ng::data::load_cifar10(folder, split);
    const ng::data::ImageDataset flat = ng::data::load_mnist(folder, split);
    return ng::data::ImageDataset{frame_images(flat.images), flat.labels};
  };
  PreparedData prepared;
  prepared.train =
      first(load(ng::data::Split::Train), settings.train_size, "training", "--train-size");
  prepared.test = first(load(ng::data::Split::Test), settings.test_size, "test", "--test-size");
  prepared.train.images = scale_pixels(prepared.train.images);
  prepared.test.images = scale_pixels(prepared.test.images);
  if (!whitening)
    whitening = ng::data::ZcaWhitening::fit(prepared.train.images, settings.zca_regularization);
  prepared.train.images = whitening->apply(prepared.train.images);
  prepared.test.images = whitening->apply(prepared.test.images);
  prepared.whitening = std::move(whitening);
  return prepared;
}

}  // namespace convpool_cnn_c
