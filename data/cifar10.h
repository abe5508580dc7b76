#pragma once
// CIFAR-10 in its binary version (cifar-10-binary.tar.gz from
// https://www.cs.toronto.edu/~kriz/cifar.html, which unpacks to cifar-10-batches-bin/): the
// training images in data_batch_1.bin ... data_batch_5.bin, the test images in
// test_batch.bin. Each file is a run of 3073-byte records: one label byte (0 to 9), then the
// 32 x 32 image's 1024 red, 1024 green and 1024 blue bytes, each channel row by row.

#include <cstdint>
#include <string>
#include <vector>

#include "data/mnist.h"

namespace normgrad::data {

inline constexpr std::int64_t kCifar10Side = 32;
inline constexpr std::int64_t kCifar10ImageBytes = 3 * kCifar10Side * kCifar10Side;
inline constexpr std::int64_t kCifar10RecordBytes = 1 + kCifar10ImageBytes;

// The files of a split, in the order their images are read.
std::vector<std::string> cifar10_files(Split split);

// Reads a split from `folder`, or from its subfolder cifar-10-batches-bin when the files are
// there: images float32 [N, 3, 32, 32] with the pixel bytes scaled to [0, 1], labels int64
// [N]. A missing file, a file that is not a whole number of records (truncated, or another
// format, such as CIFAR-100's with its two label bytes) and a label above 9 are Errors that
// name the file, before any tensor is made.
ImageDataset load_cifar10(const std::string& folder, Split split);

}  // namespace normgrad::data
