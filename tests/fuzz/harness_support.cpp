#include "harness_support.h"

#include <stdlib.h>  // mkdtemp
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace normgrad::fuzz {

namespace {

namespace fs = std::filesystem;

// A plain array, not a std::string: the atexit handler below runs after static objects
// constructed later than its registration have been destroyed.
char scratch_path[4096];

void remove_scratch_folder() {
  std::error_code ignored;
  fs::remove_all(scratch_path, ignored);
}

}  // namespace

const std::string& scratch_folder() {
  static const std::string folder = [] {
    const std::string pattern = (fs::temp_directory_path() / "normgrad-fuzz-XXXXXX").string();
    require(pattern.size() < sizeof scratch_path, "the temporary folder's path is too long");
    pattern.copy(scratch_path, pattern.size());
    scratch_path[pattern.size()] = '\0';
    require(::mkdtemp(scratch_path) != nullptr, "cannot create a private temporary folder");
    std::atexit(remove_scratch_folder);
    return std::string(scratch_path);
  }();
  return folder;
}

std::string write_scratch_file(const std::string& name, const void* data, std::size_t size) {
  const std::string path = (fs::path(scratch_folder()) / name).string();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) {
    std::fprintf(stderr, "fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
  return path;
}

void require(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "fuzz: invariant broken: %s\n", what);
    std::abort();
  }
}

void require_values_fill_shape(const data::IdxArray& array) {
  std::uint64_t count = 1;
  for (const std::int64_t dim : array.shape) {
    require(dim >= 0, "an IDX dim is negative");
    count *= static_cast<std::uint64_t>(dim);  // no wrap: read_idx refuses products past 2^31
  }
  require(count == array.values.size(), "an IDX array's values do not fill its shape");
}

}  // namespace normgrad::fuzz
