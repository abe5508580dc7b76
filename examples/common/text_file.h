#pragma once
// A text file written whole or not at all: the programs' reports, tables and CSV files go
// through normgrad's atomic writer (io/atomic_file.h), so an interrupted program never leaves
// half a file behind.

#include <string>

namespace examples {

// Makes `path` hold exactly `text`, creating its folder when missing; a normgrad::Error naming
// `program` and the path when it cannot.
void write_text_file(const std::string& path, const std::string& text, const std::string& program);

}  // namespace examples
