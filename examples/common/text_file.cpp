#include "common/text_file.h"

#include <normgrad/normgrad.h>

#include <filesystem>

#include "io/atomic_file.h"

namespace examples {

void write_text_file(const std::string& path, const std::string& text, const std::string& program) {
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  std::error_code ignored;  // a folder that cannot be made fails the write below, with its path
  if (!folder.empty()) std::filesystem::create_directories(folder, ignored);
  normgrad::io::write_atomically(path, program.c_str(), [&](const normgrad::io::FileWriter& out) {
    out.write(text.data(), text.size());
  });
}

}  // namespace examples
