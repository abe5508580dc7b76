#pragma once
// The IDX format of MNIST and Fashion-MNIST: a 4-byte magic number (two zero bytes, a type
// code, the number of dims), the dims as big-endian uint32, then the values in row-major
// order. Files may be gzip-compressed or not: both are read through zlib.

#include <cstdint>
#include <string>
#include <vector>

#include "core/shape.h"

namespace normgrad::data {

struct IdxArray {
  Shape shape;
  std::vector<std::uint8_t> values;  // unsigned bytes (type code 0x08), the format MNIST uses
};

// Reads a whole IDX file of unsigned bytes. A missing, truncated or malformed file, or another
// value type, is an Error naming the file and what is wrong.
IdxArray read_idx(const std::string& path);

// Writes an IDX file of unsigned bytes, gzip-compressed when the path ends in ".gz" (for tests
// and for making small datasets).
void write_idx(const std::string& path, const IdxArray& array);

}  // namespace normgrad::data
