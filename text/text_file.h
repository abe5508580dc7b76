#pragma once
// Reading plain text corpora and system outputs: UTF-8, one segment per line.

#include <string>
#include <string_view>
#include <vector>

namespace normgrad::text {

// The lines of a UTF-8 text file, split at "\n" only (a "\r" stays in its line, as in
// sacreBLEU, which opens files with newline="\n"); a last line without "\n" counts. A missing
// or unreadable file, a directory, or invalid UTF-8 is an Error naming the file and the line.
std::vector<std::string> read_text_lines(const std::string& path);

// The same split and checks on text already read; `path` names it in errors.
std::vector<std::string> split_text_lines(std::string_view contents, const std::string& path);

// A whole file's bytes; `op` names the caller in errors (missing file, directory).
std::string read_file_bytes(const std::string& path, const char* op);

// The lines with trailing whitespace (Python's definition) removed, as sacreBLEU's command line
// strips each line it reads.
std::vector<std::string> strip_line_ends(std::vector<std::string> lines);

}  // namespace normgrad::text
