#include "data/text_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "data/unicode_text.h"

namespace normgrad::data {

std::vector<std::string> read_text_lines(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw Error(detail::concat("read_text_lines: ", path, " is a directory, not a text file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(detail::concat("read_text_lines: cannot open ", path, ": ", std::strerror(errno)));
  }
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    // Validates; the decoded text is not kept.
    decode_utf8(line, detail::concat(path, " line ", lines.size() + 1));
    lines.push_back(std::move(line));
  }
  if (in.bad()) throw Error(detail::concat("read_text_lines: reading ", path, " failed"));
  return lines;
}

std::vector<std::string> strip_line_ends(std::vector<std::string> lines) {
  for (auto& line : lines) {
    const std::u32string text = decode_utf8(line, "strip_line_ends");
    line = encode_utf8(python_rstrip(text));
  }
  return lines;
}

}  // namespace normgrad::data
