#include "io/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

// xxHash is used header-only, so the library gains no link dependency.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "base/error.h"
#include "core/tensor_internal.h"
#include "io/atomic_file.h"
#include "io/safetensors_format.h"

namespace normgrad::io {

namespace {

const std::string checksum_prefix = "normgrad.xxh64.";

// The first byte of a CPU tensor's elements.
void* raw_data(const Tensor& t) { return detail::ref(t).data; }

std::size_t byte_size(const Tensor& t) { return t.numel() * element_size(t.dtype()); }

// A tensor's bytes as 16 hex digits of XXH64 (seed 0), as Python's xxhash.xxh64 prints them.
std::string checksum(const Tensor& t) {
  const std::size_t size = byte_size(t);
  const std::uint64_t hash = XXH64(size == 0 ? "" : raw_data(t), size, 0);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016" PRIx64, hash);
  return hex;
}

// An open file descriptor, closed when it goes out of scope.
struct OpenFile {
  int fd;
  explicit OpenFile(int descriptor) : fd(descriptor) {}
  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;
  ~OpenFile() {
    if (fd >= 0) ::close(fd);
  }
};

// Reads exactly `size` bytes at `offset`, or throws saying how many were there.
void read_exactly(int fd, void* out, std::uint64_t size, std::uint64_t offset,
                  const std::string& path) {
  char* bytes = static_cast<char*>(out);
  while (size > 0) {
    const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(size, 1u << 30));
    const ssize_t got = ::pread(fd, bytes, chunk, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    NG_CHECK(got >= 0, "load", file_error("cannot read", path));
    NG_CHECK(got > 0, "load", "'", path, "' is truncated: it ends at byte ", offset);
    bytes += got;
    offset += static_cast<std::uint64_t>(got);
    size -= static_cast<std::uint64_t>(got);
  }
}

// Checks each tensor's checksum, when the file carries them, and removes them from the
// metadata the caller sees.
void verify_checksums(const StateDict& tensors, Metadata& metadata, const std::string& path,
                      bool verify) {
  std::size_t count = 0;
  for (auto it = metadata.begin(); it != metadata.end();) {
    if (it->first.rfind(checksum_prefix, 0) != 0) {
      ++it;
      continue;
    }
    const std::string name = it->first.substr(checksum_prefix.size());
    const auto tensor = tensors.find(name);
    NG_CHECK(tensor != tensors.end(), "load", "'", path, "' has a checksum for '", name,
             "', which it does not hold");
    if (verify) {
      const std::string actual = checksum(tensor->second);
      NG_CHECK(actual == it->second, "load", "'", path, "', tensor '", name,
               "': the data do not match its checksum (xxh64 ", actual, ", expected ", it->second,
               "): the file is corrupted");
    }
    ++count;
    it = metadata.erase(it);
  }
  // A file either has a checksum for every tensor (normgrad wrote it) or none (another
  // writer); anything between means its metadata were edited.
  NG_CHECK(count == 0 || count == tensors.size(), "load", "'", path, "' has ", count,
           " checksums for ", tensors.size(), " tensors");
}

}  // namespace

void save_tensors(const StateDict& tensors, const std::string& path, const Metadata& metadata) {
  Metadata all_metadata = metadata;
  std::vector<safetensors::Entry> entries;
  std::vector<Tensor> data;
  std::uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    NG_CHECK(!name.empty(), "save", "a tensor has an empty name");
    NG_CHECK(tensor.defined(), "save", "tensor '", name, "' is undefined");
    NG_CHECK(name != "__metadata__", "save", "'__metadata__' is reserved by the format");
    const Tensor host = tensor.detach().to(Device::cpu()).contiguous();
    const std::uint64_t size = byte_size(host);
    entries.push_back({name, host.dtype(), host.shape(), offset, offset + size});
    offset += size;
    all_metadata[checksum_prefix + name] = checksum(host);
    data.push_back(host);
  }
  for (const auto& [key, value] : metadata)
    NG_CHECK(key.rfind(checksum_prefix, 0) != 0, "save", "metadata key '", key,
             "' is reserved: keys starting with '", checksum_prefix, "' hold checksums");
  const std::string header = safetensors::format(entries, all_metadata);
  write_atomically(path, "save", [&](const FileWriter& out) {
    out.write(header.data(), header.size());
    for (const Tensor& t : data) out.write(raw_data(t), byte_size(t));
  });
}

StateDict load_tensors(const std::string& path, Metadata* metadata, const LoadOptions& options) {
  const OpenFile file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  NG_CHECK(file.fd >= 0, "load", file_error("cannot open", path));
  struct stat info {};
  NG_CHECK(::fstat(file.fd, &info) == 0, "load", file_error("cannot read", path));
  NG_CHECK(!S_ISDIR(info.st_mode), "load", "'", path, "' is a directory, not a checkpoint");
  NG_CHECK(S_ISREG(info.st_mode), "load", "'", path, "' is not a regular file");
  const std::uint64_t file_size = static_cast<std::uint64_t>(info.st_size);
  NG_CHECK(file_size >= 8, "load", "'", path, "' is truncated: ", file_size,
           " bytes, fewer than the 8 of the header length");
  std::uint64_t header_size = 0;
  read_exactly(file.fd, &header_size, 8, 0, path);
  NG_CHECK(header_size <= file_size - 8, "load", "'", path, "' is truncated or not a safetensors ",
           "file: its header length says ", header_size, " bytes, but only ", file_size - 8,
           " follow");
  NG_CHECK(header_size <= safetensors::max_header_bytes, "load", "'", path, "': its header of ",
           header_size, " bytes is longer than the ", safetensors::max_header_bytes,
           " bytes allowed");
  std::string text(header_size, '\0');
  read_exactly(file.fd, text.data(), header_size, 8, path);
  const std::uint64_t data_start = 8 + header_size;
  safetensors::Header header = safetensors::parse(text, file_size - data_start, path);

  // Every size was checked against the file, so each allocation is no larger than the file;
  // the data are read straight into the tensors' storage.
  StateDict tensors;
  for (const safetensors::Entry& entry : header.entries) {
    Tensor t = ::normgrad::detail::make_tensor(entry.shape, entry.dtype, Device::cpu(), "load");
    if (entry.end > entry.begin)
      read_exactly(file.fd, raw_data(t), entry.end - entry.begin, data_start + entry.begin, path);
    tensors[entry.name] = t;
  }
  verify_checksums(tensors, header.metadata, path, options.verify_checksums);
  if (metadata != nullptr)
    *metadata = std::move(header.metadata);  // the file's, not merged with old
  return tensors;
}

void save(const nn::Module& module, const std::string& path, const Metadata& metadata) {
  save_tensors(module.state_dict(), path, metadata);
}

void load(nn::Module& module, const std::string& path, const LoadOptions& options) {
  const StateDict state = load_tensors(path, nullptr, options);
  try {
    module.load_state_dict(state, /*strict=*/true);
  } catch (const Error& error) {
    NG_CHECK(false, "load", "'", path, "' does not fit the ", module.type_name(), ": ",
             error.what());
  }
}

}  // namespace normgrad::io
