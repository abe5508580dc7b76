#include "nn/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/error.h"

namespace normgrad::nn {

namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; a big-endian host would need byte swaps");

using nlohmann::json;

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return "F32";
    case DType::Float64:
      return "F64";
    case DType::Int64:
      return "I64";
  }
  return "?";
}

bool dtype_from_name(const std::string& name, DType& dtype) {
  if (name == "F32")
    dtype = DType::Float32;
  else if (name == "F64")
    dtype = DType::Float64;
  else if (name == "I64")
    dtype = DType::Int64;
  else
    return false;
  return true;
}

std::uint64_t byte_size(const Shape& shape, DType dtype) {
  return static_cast<std::uint64_t>(numel(shape)) * element_size(dtype);
}

void* raw_data(const Tensor& t) {
  switch (t.dtype()) {
    case DType::Float32:
      return t.data_ptr<float>();
    case DType::Float64:
      return t.data_ptr<double>();
    case DType::Int64:
      return t.data_ptr<std::int64_t>();
  }
  return nullptr;
}

std::string system_error(const char* what, const std::string& path) {
  return detail::concat(what, " '", path, "': ", std::strerror(errno));
}

// Writes all of `bytes` to fd, or throws.
void write_all(int fd, const char* bytes, std::size_t size, const std::string& path) {
  while (size > 0) {
    const ssize_t written = ::write(fd, bytes, size);
    if (written < 0 && errno == EINTR) continue;
    NG_CHECK(written > 0, "save", system_error("cannot write", path));
    bytes += written;
    size -= static_cast<std::size_t>(written);
  }
}

// The file at `path` becomes `header` followed by each tensor's bytes, or stays as it was:
// everything goes to a temporary file in the same folder, which is flushed and then renamed.
void write_atomically(const std::string& path, const std::string& header,
                      const std::vector<Tensor>& tensors) {
  const std::filesystem::path target(path);
  const std::filesystem::path folder =
      target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  // mkstemp replaces the six trailing X of its template with a unique suffix.
  std::string temporary =
      (folder / ("." + target.filename().string() + ".tmp-" + std::string(6, 'X'))).string();
  const int fd = ::mkstemp(temporary.data());
  NG_CHECK(fd >= 0, "save", system_error("cannot create a temporary file in", folder.string()));
  try {
    // mkstemp makes the file private (0600); a checkpoint gets the usual 0666 less the umask.
    const mode_t mask = ::umask(0);
    ::umask(mask);
    NG_CHECK(::fchmod(fd, 0666 & ~mask) == 0, "save",
             system_error("cannot set the mode of", temporary));
    write_all(fd, header.data(), header.size(), temporary);
    for (const Tensor& t : tensors)
      write_all(fd, static_cast<const char*>(raw_data(t)), byte_size(t.shape(), t.dtype()),
                temporary);
    NG_CHECK(::fsync(fd) == 0, "save", system_error("cannot flush", temporary));
    NG_CHECK(::close(fd) == 0, "save", system_error("cannot close", temporary));
  } catch (...) {
    ::close(fd);
    ::unlink(temporary.c_str());
    throw;
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string message = system_error("cannot rename the temporary file over", path);
    ::unlink(temporary.c_str());
    NG_CHECK(false, "save", message);
  }
  // The rename itself reaches the disk when the folder is flushed.
  const int folder_fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY);
  if (folder_fd >= 0) {
    ::fsync(folder_fd);
    ::close(folder_fd);
  }
}

}  // namespace

void save_tensors(const StateDict& tensors, const std::string& path, const Metadata& metadata) {
  json header = json::object();
  std::vector<Tensor> data;
  std::uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    NG_CHECK(tensor.defined(), "save", "tensor '", name, "' is undefined");
    NG_CHECK(name != "__metadata__", "save", "'__metadata__' is reserved by the format");
    const Tensor host = tensor.detach().to(Device::cpu()).contiguous();
    const std::uint64_t size = byte_size(host.shape(), host.dtype());
    header[name] = {{"dtype", dtype_name(host.dtype())},
                    {"shape", host.shape()},
                    {"data_offsets", {offset, offset + size}}};
    offset += size;
    data.push_back(host);
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  std::string bytes(8, '\0');
  const std::uint64_t length = text.size();
  std::memcpy(bytes.data(), &length, 8);
  write_atomically(path, bytes + text, data);
}

StateDict load_tensors(const std::string& path, Metadata* metadata) {
  std::ifstream file(path, std::ios::binary);
  NG_CHECK(file.good(), "load", system_error("cannot open", path));
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const std::uint64_t file_size = bytes.size();
  NG_CHECK(file_size >= 8, "load", "'", path, "' is truncated: ", file_size,
           " bytes, fewer than the 8 of the header length");
  std::uint64_t header_size = 0;
  std::memcpy(&header_size, bytes.data(), 8);
  NG_CHECK(header_size <= file_size - 8, "load", "'", path, "' is truncated or not a safetensors ",
           "file: its header length says ", header_size, " bytes, but only ", file_size - 8,
           " follow");
  json header;
  try {
    header = json::parse(bytes.begin() + 8,
                         bytes.begin() + 8 + static_cast<std::ptrdiff_t>(header_size));
  } catch (const json::exception& error) {
    NG_CHECK(false, "load", "'", path, "': the header is not valid JSON (", error.what(), ")");
  }
  NG_CHECK(header.is_object(), "load", "'", path, "': the header is not a JSON object");
  const std::uint64_t data_size = file_size - 8 - header_size;

  struct Entry {
    std::string name;
    DType dtype;
    Shape shape;
    std::uint64_t begin, end;
  };
  std::vector<Entry> entries;
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") {
      NG_CHECK(info.is_object(), "load", "'", path, "': __metadata__ must be an object");
      if (metadata != nullptr)
        for (const auto& [key, value] : info.items())
          (*metadata)[key] = value.is_string() ? value.get<std::string>() : value.dump();
      continue;
    }
    const auto where = [&path, &name = name] {
      return detail::concat("'", path, "', tensor '", name, "'");
    };
    NG_CHECK(info.is_object() && info.contains("dtype") && info.contains("shape") &&
                 info.contains("data_offsets"),
             "load", where(), ": needs dtype, shape and data_offsets");
    Entry entry{name, DType::Float32, {}, 0, 0};
    NG_CHECK(
        info["dtype"].is_string() && dtype_from_name(info["dtype"].get<std::string>(), entry.dtype),
        "load", where(), ": dtype ", info["dtype"].dump(), " is not one of F32, F64, I64");
    NG_CHECK(info["shape"].is_array(), "load", where(), ": shape is not a list");
    for (const json& size : info["shape"]) {
      NG_CHECK(size.is_number_integer() && size.get<std::int64_t>() >= 0, "load", where(),
               ": shape ", info["shape"].dump(), " has a size that is not a non-negative integer");
      entry.shape.push_back(size.get<std::int64_t>());
    }
    const json& offsets = info["data_offsets"];
    NG_CHECK(offsets.is_array() && offsets.size() == 2 && offsets[0].is_number_unsigned() &&
                 offsets[1].is_number_unsigned(),
             "load", where(), ": data_offsets ", offsets.dump(), " is not [begin, end]");
    entry.begin = offsets[0].get<std::uint64_t>();
    entry.end = offsets[1].get<std::uint64_t>();
    NG_CHECK(entry.begin <= entry.end && entry.end <= data_size, "load", where(), ": data_offsets ",
             offsets.dump(), " lie outside the ", data_size,
             " bytes of data (is the file truncated?)");
    NG_CHECK(entry.end - entry.begin == byte_size(entry.shape, entry.dtype), "load", where(),
             ": shape ", entry.shape, " of ", dtype_name(entry.dtype), " needs ",
             byte_size(entry.shape, entry.dtype), " bytes, but its data_offsets span ",
             entry.end - entry.begin);
    entries.push_back(std::move(entry));
  }
  // The tensors must tile the data exactly: no overlap, no gap, nothing left over.
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  std::uint64_t expected = 0;
  for (const Entry& entry : entries) {
    NG_CHECK(entry.begin == expected, "load", "'", path, "', tensor '", entry.name,
             "': its data starts at byte ", entry.begin, " where ", expected,
             " was expected (overlapping or missing data)");
    expected = entry.end;
  }
  NG_CHECK(expected == data_size, "load", "'", path, "': ", data_size - expected,
           " bytes of data follow the last tensor");

  StateDict tensors;
  const char* data = bytes.data() + 8 + header_size;
  for (const Entry& entry : entries) {
    Tensor t = zeros(entry.shape, {.dtype = entry.dtype});
    if (entry.end > entry.begin)
      std::memcpy(raw_data(t), data + entry.begin, entry.end - entry.begin);
    tensors[entry.name] = t;
  }
  return tensors;
}

void save(const Module& module, const std::string& path, const Metadata& metadata) {
  save_tensors(module.state_dict(), path, metadata);
}

void load(Module& module, const std::string& path) {
  const StateDict state = load_tensors(path);
  try {
    module.load_state_dict(state, /*strict=*/true);
  } catch (const Error& error) {
    NG_CHECK(false, "load", "'", path, "' does not fit the ", module.type_name(), ": ",
             error.what());
  }
}

}  // namespace normgrad::nn
