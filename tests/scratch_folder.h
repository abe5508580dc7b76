#pragma once
// A fresh folder under the temporary directory for one test, removed afterwards.

#include <filesystem>
#include <string>

namespace testing {

struct ScratchFolder {
  explicit ScratchFolder(const std::string& name)
      : path(std::filesystem::temp_directory_path() / ("normgrad_test_" + name)) {
    std::filesystem::remove_all(path);
  }
  ~ScratchFolder() { std::filesystem::remove_all(path); }
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  std::string operator/(const std::string& child) const { return (path / child).string(); }
  std::filesystem::path path;
};

}  // namespace testing
