#include "data/npy.h"

#include <bit>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "io/atomic_file.h"

namespace normgrad::data {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicSize = 6;

using File = std::unique_ptr<std::FILE, decltype(&std::fclose)>;

// The header's dict, a Python literal: {'descr': '<f4', 'fortran_order': False,
// 'shape': (2, 3), } with the keys in any order, either quote, spaces anywhere between tokens
// and an optional trailing comma. Only these three keys and their plain forms are accepted.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& path) : text_(text), path_(path) {}

  struct Header {
    std::string descr;
    bool fortran_order = false;
    Shape shape;
  };

  Header parse() {
    Header header;
    bool seen[3] = {false, false, false};
    expect('{');
    while (!peek_is('}')) {
      const std::string key = string_literal();
      expect(':');
      if (key == "descr") {
        header.descr = string_literal();
        mark(seen[0], key);
      } else if (key == "fortran_order") {
        header.fortran_order = boolean();
        mark(seen[1], key);
      } else if (key == "shape") {
        header.shape = tuple();
        mark(seen[2], key);
      } else {
        fail("an unknown key '" + key + "'");
      }
      if (!peek_is('}')) expect(',');
    }
    expect('}');
    skip_spaces();
    NG_CHECK(at_ == text_.size(), "read_npy", "'", path_,
             "': the header has more after its dict: '", std::string(text_.substr(at_)), "'");
    NG_CHECK(seen[0] && seen[1] && seen[2], "read_npy", "'", path_,
             "': the header lacks one of 'descr', 'fortran_order' and 'shape': '",
             std::string(text_), "'");
    return header;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error("read_npy: '" + path_ + "': the header is not a .npy header: " + what +
                " at byte " + std::to_string(at_) + " of '" + std::string(text_) + "'");
  }
  void mark(bool& seen, const std::string& key) const {
    if (seen) fail("'" + key + "' twice");
    seen = true;
  }
  void skip_spaces() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\n' || text_[at_] == '\t'))
      ++at_;
  }
  bool peek_is(char c) {
    skip_spaces();
    return at_ < text_.size() && text_[at_] == c;
  }
  void expect(char c) {
    if (!peek_is(c)) fail(std::string("no '") + c + "'");
    ++at_;
  }
  std::string string_literal() {
    skip_spaces();
    if (at_ >= text_.size() || (text_[at_] != '\'' && text_[at_] != '"')) fail("no string");
    const char quote = text_[at_++];
    const std::size_t end = text_.find(quote, at_);
    if (end == std::string_view::npos) fail("an unterminated string");
    std::string value(text_.substr(at_, end - at_));
    at_ = end + 1;
    return value;
  }
  bool boolean() {
    skip_spaces();
    for (const auto& [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      const std::size_t length = std::strlen(word);
      if (text_.substr(at_, length) == word) {
        at_ += length;
        return value;
      }
    }
    fail("no True or False");
  }
  Shape tuple() {
    Shape shape;
    expect('(');
    while (!peek_is(')')) {
      std::uint64_t value = 0;
      const std::size_t first = at_;
      while (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_]))) {
        const auto digit = static_cast<std::uint64_t>(text_[at_++] - '0');
        if (value > (std::uint64_t{1} << 62) / 10) fail("a dim too large");
        value = value * 10 + digit;
      }
      if (at_ == first) fail("a dim that is not a non-negative integer");
      shape.push_back(static_cast<std::int64_t>(value));
      if (!peek_is(')')) expect(',');
    }
    expect(')');
    return shape;
  }

  std::string_view text_;
  const std::string& path_;
  std::size_t at_ = 0;
};

void read_exactly(std::FILE* file, void* out, std::size_t size, const std::string& path,
                  const char* what) {
  NG_CHECK(std::fread(out, 1, size, file) == size, "read_npy", "'", path,
           "' is truncated: it ends inside its ", what);
}

std::uint32_t little_endian(const std::uint8_t* bytes, int count) {
  std::uint32_t value = 0;
  for (int i = count - 1; i >= 0; --i) value = (value << 8) | bytes[i];
  return value;
}

}  // namespace

Tensor read_npy(const std::string& path) {
  std::error_code error;
  NG_CHECK(!std::filesystem::is_directory(path, error), "read_npy", "'", path,
           "' is a directory, not a .npy file");
  const File file(std::fopen(path.c_str(), "rb"), &std::fclose);
  NG_CHECK(file != nullptr, "read_npy", io::file_error("cannot open", path));
  std::uint8_t start[kMagicSize + 2];
  read_exactly(file.get(), start, sizeof start, path, "magic number");
  NG_CHECK(std::memcmp(start, kMagic, kMagicSize) == 0, "read_npy", "'", path,
           "' is not a .npy file: it does not start with \\x93NUMPY");
  const int major = start[kMagicSize], minor = start[kMagicSize + 1];
  NG_CHECK((major == 1 || major == 2 || major == 3) && minor == 0, "read_npy", "'", path,
           "' is .npy version ", major, ".", minor, "; versions 1.0, 2.0 and 3.0 are read");
  const int length_bytes = major == 1 ? 2 : 4;
  std::uint8_t length_field[4];
  read_exactly(file.get(), length_field, static_cast<std::size_t>(length_bytes), path,
               "header length");
  const std::uint32_t header_length = little_endian(length_field, length_bytes);
  NG_CHECK(header_length <= max_npy_header_bytes, "read_npy", "'", path, "' claims a header of ",
           header_length, " bytes, more than the ", max_npy_header_bytes, " a .npy file may have");
  std::string text(header_length, '\0');
  read_exactly(file.get(), text.data(), header_length, path, "header");
  const HeaderParser::Header header = HeaderParser(text, path).parse();
  NG_CHECK(header.descr == "<f4", "read_npy", "'", path, "' holds values of dtype '", header.descr,
           "'; only little-endian float32 ('<f4') is read: save it with "
           "array.astype('<f4')");
  NG_CHECK(!header.fortran_order, "read_npy", "'", path,
           "' is in Fortran order; only C order is read: save numpy.ascontiguousarray(array)");

  std::uint64_t count = 1;
  bool overflow = false;
  for (const std::int64_t dim : header.shape)
    overflow = overflow || __builtin_mul_overflow(count, static_cast<std::uint64_t>(dim), &count);
  std::uint64_t value_bytes = 0;
  overflow = overflow || __builtin_mul_overflow(count, std::uint64_t{4}, &value_bytes) ||
             value_bytes > static_cast<std::uint64_t>(INT64_MAX);
  const std::uint64_t header_end = kMagicSize + 2 + length_bytes + std::uint64_t{header_length};
  const std::uint64_t file_size = std::filesystem::file_size(path, error);
  NG_CHECK(!error, "read_npy", "cannot take the size of '", path, "': ", error.message());
  NG_CHECK(!overflow && file_size - header_end == value_bytes, "read_npy", "'", path,
           "': its shape ", header.shape, " calls for ",
           overflow ? std::string("2^63 or more") : std::to_string(value_bytes),
           " bytes of values, but ", file_size - header_end, " follow the header");

  Tensor values = empty(header.shape, {.dtype = DType::Float32});
  auto* data = values.data_ptr<float>();
  read_exactly(file.get(), data, value_bytes, path, "values");
  if constexpr (std::endian::native == std::endian::big) {
    auto* words = reinterpret_cast<std::uint32_t*>(data);
    for (std::uint64_t i = 0; i < count; ++i) words[i] = __builtin_bswap32(words[i]);
  }
  return values;
}

void write_npy(const std::string& path, const Tensor& values) {
  NG_CHECK(values.defined(), "write_npy", "'", path, "': the tensor is undefined");
  NG_CHECK(values.dtype() == DType::Float32, "write_npy", "'", path,
           "': writes float32 tensors, got ", values.dtype());
  const Tensor host = values.to(Device::cpu()).contiguous();
  // Python's tuple: (), (5,) or (2, 3).
  std::string shape;
  for (std::int64_t d = 0; d < host.dim(); ++d)
    shape += (d > 0 ? ", " : "") + std::to_string(host.size(d));
  if (host.dim() == 1) shape += ",";
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + shape + "), }";
  // Spaces and a newline, so that the values start at a multiple of 64 bytes, as NumPy pads.
  const std::size_t prefix = kMagicSize + 2 + 2;
  header.append(63 - (prefix + header.size()) % 64, ' ');
  header += '\n';
  NG_CHECK(header.size() <= 65535, "write_npy", "the header for shape ", host.shape(),
           " is too long for version 1.0");
  std::vector<float> swapped;
  const float* data = host.data_ptr<float>();
  if constexpr (std::endian::native == std::endian::big) {
    swapped.assign(data, data + host.numel());
    for (float& value : swapped)
      value = std::bit_cast<float>(__builtin_bswap32(std::bit_cast<std::uint32_t>(value)));
    data = swapped.data();
  }
  io::write_atomically(path, "write_npy", [&](const io::FileWriter& out) {
    const std::uint8_t start[] = {0x93,
                                  'N',
                                  'U',
                                  'M',
                                  'P',
                                  'Y',
                                  1,
                                  0,
                                  static_cast<std::uint8_t>(header.size() & 0xff),
                                  static_cast<std::uint8_t>(header.size() >> 8)};
    out.write(start, sizeof start);
    out.write(header.data(), header.size());
    out.write(data, static_cast<std::size_t>(host.numel()) * sizeof(float));
  });
}

}  // namespace normgrad::data
