#pragma once
// The safetensors layout, as normgrad reads and writes it (used by checkpoint.cpp):
//
//   8 bytes      the header's length N, little-endian uint64
//   N bytes      a JSON object: for each tensor {"dtype", "shape", "data_offsets": [begin, end]},
//                and optionally "__metadata__", an object of strings
//   the data     each tensor's bytes at [begin, end) counted from the end of the header
//
// A header is trusted in nothing: every size is checked before it is used, the tensors must
// tile the data exactly (no gap, no overlap, nothing left over), a tensor's shape times its
// element size must equal its byte span, and a repeated or empty name is refused (JSON parsers
// usually keep the last of two equal keys silently).

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/dtype.h"
#include "base/shape.h"

namespace normgrad::io::safetensors {

// The largest header read: 100 MB, the limit of the reference implementation. A header is a
// few hundred bytes per tensor, so this leaves room for hundreds of thousands of tensors.
inline constexpr std::uint64_t max_header_bytes = 100'000'000;

struct Entry {
  std::string name;
  DType dtype = DType::Float32;
  Shape shape;
  std::uint64_t begin = 0, end = 0;  // byte range within the data
};

struct Header {
  std::vector<Entry> entries;  // in the order of their data
  std::map<std::string, std::string> metadata;
};

// "F32", "F64", "I64".
const char* dtype_name(DType dtype);

// Parses and checks a header for `data_size` bytes of data; `path` names the file in errors.
Header parse(std::string_view text, std::uint64_t data_size, const std::string& path);

// The 8-byte length and the header text for tensors laid out in the order given (offsets are
// assigned here), padded with spaces so that the data starts 8-byte aligned.
std::string format(const std::vector<Entry>& entries,
                   const std::map<std::string, std::string>& metadata);

}  // namespace normgrad::io::safetensors
