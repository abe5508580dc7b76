#pragma once
// NumPy's .npy format, the subset that holds feature matrices: float32, little-endian, C
// order, any number of dims. This is how the order-embedding code's users keep their image
// features (one row of 4096 VGG values per image), and what NumPy writes for
// `numpy.save(path, array.astype('<f4'))`.
//
// A file is the magic "\x93NUMPY", a major and a minor version byte (1.0, 2.0 or 3.0), the
// header's length (2 bytes little-endian in 1.0, 4 bytes after), the header (a Python dict
// literal such as {'descr': '<f4', 'fortran_order': False, 'shape': (1000, 4096), }, padded
// with spaces to a multiple of 64 bytes and ended by '\n'), then the values.
//
//   Tensor features = data::read_npy("coco/images/10crop/train.npy");   // float32 [N, 4096]
//   data::write_npy("features.npy", features);

#include <cstdint>
#include <string>

#include "core/tensor.h"

namespace normgrad::data {

// The longest header read_npy accepts: NumPy's own reader refuses headers over 10000 bytes
// unless told otherwise, and a feature matrix's header is under 128.
inline constexpr std::uint32_t max_npy_header_bytes = 10000;

// Reads a .npy file of float32 into a CPU tensor of its shape (a 0-dim file into a scalar).
// Anything else is refused with an Error naming the file and what it holds: another dtype
// (float64, integers, big-endian, objects), Fortran order, a malformed or over-long header,
// a bad magic number or version, or a file whose size is not exactly its shape's (truncated,
// or with bytes after the values). The size is checked before anything is allocated.
Tensor read_npy(const std::string& path);

// Writes a float32 tensor (of any device and layout) as a version 1.0 .npy file, atomically.
void write_npy(const std::string& path, const Tensor& values);

}  // namespace normgrad::data
