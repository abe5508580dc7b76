#include "text/text_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "base/error.h"
#include "text/unicode_text.h"

namespace normgrad::text {

std::string read_file_bytes(const std::string& path, const char* op) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw Error(detail::concat(op, ": ", path, " is a directory, not a text file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(detail::concat(op, ": cannot open ", path, ": ", std::strerror(errno)));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw Error(detail::concat(op, ": reading ", path, " failed"));
  return bytes;
}

std::vector<std::string> split_text_lines(std::string_view contents, const std::string& path) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < contents.size()) {
    std::size_t end = contents.find('\n', start);
    if (end == std::string_view::npos) end = contents.size();
    const std::string_view line = contents.substr(start, end - start);
    decode_utf8(line, detail::concat(path, " line ", lines.size() + 1));  // validates only
    lines.emplace_back(line);
    start = end + 1;
  }
  return lines;
}

std::vector<std::string> read_text_lines(const std::string& path) {
  return split_text_lines(read_file_bytes(path, "read_text_lines"), path);
}

std::vector<std::string> strip_line_ends(std::vector<std::string> lines) {
  for (auto& line : lines) {
    const std::u32string text = decode_utf8(line, "strip_line_ends");
    line = encode_utf8(python_rstrip(text));
  }
  return lines;
}

}  // namespace normgrad::text
