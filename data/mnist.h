#pragma once
// MNIST-format datasets (MNIST, Fashion-MNIST): the four IDX files of a folder, as tensors.
// Debian's dataset-fashion-mnist package installs Fashion-MNIST in kFashionMnistFolder;
// fashion_mnist_folder() lets the environment name another copy.

#include <string>

#include "core/tensor.h"

namespace normgrad::data {

inline constexpr const char* kFashionMnistFolder = "/usr/share/datasets/fashion-mnist";

// Where the examples and tests look for Fashion-MNIST: $NORMGRAD_FASHION_MNIST when it is set
// and not empty (a copy outside Debian's package, say on a machine without it), otherwise
// kFashionMnistFolder.
std::string fashion_mnist_folder();

enum class Split { Train, Test };

struct ImageDataset {
  // float32, pixel values scaled to [0, 1]: [N, rows * columns] from load_mnist, [N, 3, 32, 32]
  // from load_cifar10
  Tensor images;
  Tensor labels;  // int64 [N], in [0, 10)
};

// Reads <folder>/{train,t10k}-{images-idx3,labels-idx1}-ubyte(.gz). The two files must agree
// on N, and every label must be a class in [0, 10); otherwise an Error says which file is wrong.
ImageDataset load_mnist(const std::string& folder, Split split);

}  // namespace normgrad::data
