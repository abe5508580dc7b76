#include "data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <new>
#include <string>

#include "base/error.h"

namespace normgrad::data {

namespace {

constexpr std::uint8_t unsigned_byte_type = 0x08;

using GzFile = std::unique_ptr<gzFile_s, decltype(&gzclose)>;

GzFile open(const std::string& path, const char* mode, const char* op) {
  GzFile file(gzopen(path.c_str(), mode), &gzclose);
  NG_CHECK(file != nullptr, op, "cannot open '", path, "'");
  return file;
}

// Reads exactly `size` bytes, or says how many were there.
// `before` and `total` place a chunk within a larger read, for the message.
void read_exactly(gzFile file, void* out, std::size_t size, const std::string& path,
                  const char* what, std::uint64_t before = 0, std::uint64_t total = 0) {
  auto* bytes = static_cast<std::uint8_t*>(out);
  std::size_t done = 0;
  while (done < size) {
    const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(size - done, 1u << 30));
    const int got = gzread(file, bytes + done, chunk);
    int error = Z_OK;
    const char* message = gzerror(file, &error);
    NG_CHECK(got >= 0 && error == Z_OK, "read_idx", "'", path, "': cannot read the ", what,
             " (truncated or corrupted): ", message);
    NG_CHECK(got > 0, "read_idx", "'", path, "' is truncated: its ", what, " needs ",
             total > 0 ? total : size, " bytes, but only ", before + done, " are there");
    done += static_cast<std::size_t>(got);
  }
}

}  // namespace

IdxArray read_idx(const std::string& path) {
  std::error_code error;
  NG_CHECK(!std::filesystem::is_directory(path, error), "read_idx", "'", path,
           "' is a directory, not an IDX file");
  const GzFile file = open(path, "rb", "read_idx");
  std::uint8_t magic[4];
  read_exactly(file.get(), magic, 4, path, "magic number");
  NG_CHECK(magic[0] == 0 && magic[1] == 0 && magic[3] >= 1, "read_idx", "'", path,
           "' is not an IDX file: its magic number is ", int(magic[0]), " ", int(magic[1]), " ",
           int(magic[2]), " ", int(magic[3]), " (expected 0 0 <type> <dims>)");
  NG_CHECK(magic[2] == unsigned_byte_type, "read_idx", "'", path, "' holds values of type 0x",
           std::hex, int(magic[2]), std::dec, "; only unsigned bytes (0x08), as MNIST's, are read");
  IdxArray array;
  std::uint64_t count = 1;
  bool overflow = false;
  for (int d = 0; d < magic[3]; ++d) {
    std::uint8_t size[4];
    read_exactly(file.get(), size, 4, path, "dims");
    const std::uint32_t value = (std::uint32_t{size[0]} << 24) | (std::uint32_t{size[1]} << 16) |
                                (std::uint32_t{size[2]} << 8) | size[3];
    array.shape.push_back(value);
    overflow = overflow || __builtin_mul_overflow(count, std::uint64_t{value}, &count);
  }
  NG_CHECK(!overflow && count <= max_idx_values, "read_idx", "'", path, "': dims ", array.shape,
           " call for ", overflow ? "2^64 or more" : std::to_string(count),
           " values, more than the ", max_idx_values, " (2 GiB) an IDX file may hold");
  // An uncompressed file's claim is checked against its size before anything is allocated.
  const std::uint64_t header_size = 4 + 4 * std::uint64_t{magic[3]};
  if (gzdirect(file.get()) == 1) {
    const std::uint64_t file_size = std::filesystem::file_size(path, error);
    NG_CHECK(error || file_size >= header_size + count, "read_idx", "'", path,
             "' is truncated: its dims ", array.shape, " call for ", count, " values, but only ",
             file_size - header_size, " bytes follow the header");
  }
  // A compressed stream's real length is unknown until it is read, so the values grow as they
  // arrive, a chunk at a time: a small file that claims much holds only what it delivers.
  try {
    constexpr std::uint64_t chunk = std::uint64_t{64} << 20;
    std::uint64_t done = 0;
    while (done < count) {
      const std::uint64_t next = std::min(count, done + chunk);
      array.values.resize(next);
      read_exactly(file.get(), array.values.data() + done, next - done, path, "values", done,
                   count);
      done = next;
    }
  } catch (const std::bad_alloc&) {
    NG_CHECK(false, "read_idx", "'", path, "': out of memory allocating ", count,
             " bytes for dims ", array.shape);
  }
  std::uint8_t extra = 0;
  NG_CHECK(gzread(file.get(), &extra, 1) == 0, "read_idx", "'", path, "' has bytes after the ",
           count, " values its dims ", array.shape, " call for");
  return array;
}

void write_idx(const std::string& path, const IdxArray& array) {
  NG_CHECK(!array.shape.empty() && array.shape.size() <= 255, "write_idx",
           "needs 1 to 255 dims, got ", array.shape);
  NG_CHECK(static_cast<std::uint64_t>(numel(array.shape)) == array.values.size(), "write_idx",
           "dims ", array.shape, " call for ", numel(array.shape), " values, got ",
           array.values.size());
  const bool compress = path.size() >= 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  const GzFile file = open(path, compress ? "wb" : "wbT", "write_idx");
  const std::vector<std::uint8_t> header = [&] {
    std::vector<std::uint8_t> bytes = {0, 0, unsigned_byte_type,
                                       static_cast<std::uint8_t>(array.shape.size())};
    for (const std::int64_t size : array.shape)
      for (int shift = 24; shift >= 0; shift -= 8)
        bytes.push_back(static_cast<std::uint8_t>(static_cast<std::uint64_t>(size) >> shift));
    return bytes;
  }();
  for (const auto* part : {&header, &array.values})
    NG_CHECK(
        part->empty() || gzwrite(file.get(), part->data(), static_cast<unsigned>(part->size())) > 0,
        "write_idx", "cannot write '", path, "'");
}

}  // namespace normgrad::data
