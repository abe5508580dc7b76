#pragma once
// The images the model trains on, prepared as the paper's CIFAR-10 code prepares them: pixel
// bytes x scaled to (x - 127.5) / 128, then ZCA whitening fitted on the training images with
// regularisation 1e-5 (data/zca.h) and applied to both splits.
//
// Two datasets: CIFAR-10 (its binary version, [N, 3, 32, 32]) for the paper's own setting,
// and Fashion-MNIST (Debian's dataset-fashion-mnist) as the bundled default, each 28 x 28
// image placed in the middle of a 32 x 32 frame of background (pixel 0), one channel.

#include <normgrad/normgrad.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace convpool_cnn_c {

enum class DatasetKind { FashionMnist, Cifar10 };

// "fashion-mnist" or "cifar10"; anything else is an Error naming both.
DatasetKind parse_dataset(std::string_view name);
std::string dataset_name(DatasetKind kind);
// Debian's Fashion-MNIST folder for FashionMnist; CIFAR-10 has no default.
std::string default_data_folder(DatasetKind kind);
std::int64_t image_channels(DatasetKind kind);
// The images a test set of this kind holds: 10000 for both.
inline constexpr std::int64_t kTestImages = 10000;

struct DataSettings {
  DatasetKind kind = DatasetKind::FashionMnist;
  std::string folder{};         // empty: default_data_folder(kind)
  std::int64_t train_size = 0;  // the first so many training images; 0: all
  std::int64_t test_size = 0;   // the first so many test images; 0: all
  double zca_regularization = normgrad::data::ZcaWhitening::default_regularization;
};

struct PreparedData {
  normgrad::data::ImageDataset train, test;  // float32 [N, C, 32, 32], whitened; int64 labels
  std::optional<normgrad::data::ZcaWhitening> whitening;
};

// Pixels in [0, 1] (bytes / 255, as the loaders give them) -> (byte - 127.5) / 128.
normgrad::Tensor scale_pixels(const normgrad::Tensor& unit_pixels);
// Fashion-MNIST's [N, 784] -> [N, 1, 32, 32], each image in the middle of a frame of zeros.
normgrad::Tensor frame_images(const normgrad::Tensor& flat_images);

// Loads both splits, scales them and whitens them: with `whitening` when given (a model
// folder's), else with one fitted here on the training images used. Sizes larger than the
// split, or negative, are Errors.
PreparedData prepare_data(const DataSettings& settings,
                          std::optional<normgrad::data::ZcaWhitening> whitening = std::nullopt);

}  // namespace convpool_cnn_c
