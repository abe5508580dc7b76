#pragma once
// The IDX format of MNIST and Fashion-MNIST: a 4-byte magic number (two zero bytes, a type
// code, the number of dims), the dims as big-endian uint32, then the values in row-major
// order. Files may be gzip-compressed or not: both are read through zlib.

#include <cstdint>
#include <string>
#include <vector>

#include "base/shape.h"

namespace normgrad::data {

struct IdxArray {
  Shape shape;
  std::vector<std::uint8_t> values;  // unsigned bytes (type code 0x08), the format MNIST uses
};

// The most values read_idx accepts: 2^31 bytes (2 GiB), ten times the largest MNIST-format
// dataset in use (EMNIST, 0.7 GB), and small enough that a hostile header cannot make a
// loader ask for more memory than a workstation has.
inline constexpr std::uint64_t max_idx_values = std::uint64_t{1} << 31;

// Reads a whole IDX file of unsigned bytes. A missing, truncated or malformed file, a
// directory, another value type, or dims whose product overflows or exceeds max_idx_values
// is an Error naming the file and what is wrong. The header's claim is never trusted: an
// uncompressed file is checked against its size before anything is allocated, and a gzip
// stream is read in 64 MiB chunks, so memory grows only as data really arrive.
IdxArray read_idx(const std::string& path);

// Writes an IDX file of unsigned bytes, gzip-compressed when the path ends in ".gz" (for tests
// and for making small datasets).
void write_idx(const std::string& path, const IdxArray& array);

}  // namespace normgrad::data
