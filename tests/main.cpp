// The test runner: doctest's main, run inside a temporary folder of its own.
//
// ctest starts one process per test case and runs them in parallel, and many cases write
// fixtures under fixed names in the temporary folder. Each process therefore gets a fresh
// folder, made here and named in TMPDIR (which std::filesystem::temp_directory_path reads),
// so that two cases never write the same file. The folder is removed when the run ends.
// The profiler's ceilings file goes there too.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <stdlib.h>

#include <filesystem>
#include <iostream>
#include <string>
#include <system_error>

namespace {

class PrivateTemporaryFolder {
 public:
  PrivateTemporaryFolder() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "normgrad-tests-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::cerr << "tests: cannot make a temporary folder from " << pattern
                << "; the cases share the system's\n";
      return;
    }
    path_ = pattern;
    ::setenv("TMPDIR", path_.c_str(), 1);
    // The profiler's ceilings (io/ceilings.h), which programs run with --profile measure, are
    // kept there too rather than in the user's cache.
    ::setenv("NORMGRAD_CEILINGS", (path_ + "/ceilings.tsv").c_str(), 1);
  }
  ~PrivateTemporaryFolder() {
    if (path_.empty()) return;
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  PrivateTemporaryFolder(const PrivateTemporaryFolder&) = delete;
  PrivateTemporaryFolder& operator=(const PrivateTemporaryFolder&) = delete;

 private:
  std::string path_;
};

}  // namespace

int main(int argc, char** argv) {
  const PrivateTemporaryFolder folder;
  doctest::Context context(argc, argv);
  return context.run();
}
