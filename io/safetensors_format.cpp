#include "io/safetensors_format.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "base/checked.h"
#include "base/error.h"

namespace normgrad::io::safetensors {

namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; a big-endian host would need byte swaps");

using nlohmann::json;

bool dtype_from_name(const std::string& name, DType& dtype) {
  if (name == "F32")
    dtype = DType::Float32;
  else if (name == "F64")
    dtype = DType::Float64;
  else if (name == "I64")
    dtype = DType::Int64;
  else if (name == "BF16")
    dtype = DType::BFloat16;
  else
    return false;
  return true;
}

// Parses JSON, refusing an object that names one key twice, at any depth.
json parse_without_repeated_keys(std::string_view text, const std::string& path) {
  std::vector<std::set<std::string>> open_objects;
  const json::parser_callback_t callback = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) {
      open_objects.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      open_objects.pop_back();
    } else if (event == json::parse_event_t::key) {
      const std::string& key = parsed.get_ref<const std::string&>();
      NG_CHECK(open_objects.back().insert(key).second, "load", "'", path, "': the header names '",
               key, "' twice");
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), callback);
  } catch (const json::exception& error) {
    NG_CHECK(false, "load", "'", path, "': the header is not valid JSON (", error.what(), ")");
  }
  return {};
}

Entry parse_entry(const std::string& name, const json& info, std::uint64_t data_size,
                  const std::string& path) {
  const auto where = [&] { return detail::concat("'", path, "', tensor '", name, "'"); };
  NG_CHECK(!name.empty(), "load", "'", path, "': a tensor has an empty name");
  NG_CHECK(info.is_object() && info.contains("dtype") && info.contains("shape") &&
               info.contains("data_offsets"),
           "load", where(), ": needs dtype, shape and data_offsets");
  Entry entry;
  entry.name = name;
  NG_CHECK(
      info["dtype"].is_string() && dtype_from_name(info["dtype"].get<std::string>(), entry.dtype),
      "load", where(), ": dtype ", info["dtype"].dump(), " is not one of F32, F64, I64");
  NG_CHECK(info["shape"].is_array(), "load", where(), ": shape is not a list");
  for (const json& size : info["shape"]) {
    // A size above int64's range arrives as an unsigned number, or as a float when it does
    // not fit uint64 either; both are refused.
    NG_CHECK(
        size.is_number_unsigned() &&
            size.get<std::uint64_t>() <= std::uint64_t(std::numeric_limits<std::int64_t>::max()),
        "load", where(), ": shape ", info["shape"].dump(),
        " has a size that is not an integer in [0, 2^63)");
    entry.shape.push_back(static_cast<std::int64_t>(size.get<std::uint64_t>()));
  }
  std::uint64_t size = 0;
  try {
    size = checked_nbytes(entry.shape, element_size(entry.dtype), "load");
  } catch (const Error& error) {
    NG_CHECK(false, "load", where(), ": ", error.what());
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
  NG_CHECK(entry.end - entry.begin == size, "load", where(), ": shape ", entry.shape, " of ",
           dtype_name(entry.dtype), " needs ", size, " bytes, but its data_offsets span ",
           entry.end - entry.begin);
  return entry;
}

}  // namespace

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return "F32";
    case DType::Float64:
      return "F64";
    case DType::Int64:
      return "I64";
    case DType::BFloat16:
      return "BF16";
  }
  return "?";
}

Header parse(std::string_view text, std::uint64_t data_size, const std::string& path) {
  const json document = parse_without_repeated_keys(text, path);
  NG_CHECK(document.is_object(), "load", "'", path, "': the header is not a JSON object");
  Header header;
  for (const auto& [name, info] : document.items()) {
    if (name == "__metadata__") {
      NG_CHECK(info.is_object(), "load", "'", path, "': __metadata__ must be an object");
      for (const auto& [key, value] : info.items())
        header.metadata[key] = value.is_string() ? value.get<std::string>() : value.dump();
      continue;
    }
    header.entries.push_back(parse_entry(name, info, data_size, path));
  }
  // The tensors must tile the data exactly: no overlap, no gap, nothing left over.
  std::sort(header.entries.begin(), header.entries.end(),
            [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  std::uint64_t expected = 0;
  for (const Entry& entry : header.entries) {
    NG_CHECK(entry.begin == expected, "load", "'", path, "', tensor '", entry.name,
             "': its data starts at byte ", entry.begin, " where ", expected,
             " was expected (overlapping or missing data)");
    expected = entry.end;
  }
  NG_CHECK(expected == data_size, "load", "'", path, "': ", data_size - expected,
           " bytes of data follow the last tensor");
  return header;
}

std::string format(const std::vector<Entry>& entries,
                   const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  std::uint64_t offset = 0;
  for (const Entry& entry : entries) {
    const std::uint64_t size = entry.end - entry.begin;
    header[entry.name] = {{"dtype", dtype_name(entry.dtype)},
                          {"shape", entry.shape},
                          {"data_offsets", {offset, offset + size}}};
    offset += size;
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  std::string bytes(8, '\0');
  const std::uint64_t length = text.size();
  std::memcpy(bytes.data(), &length, 8);
  return bytes + text;
}

}  // namespace normgrad::io::safetensors
