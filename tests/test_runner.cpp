// The test runner itself: every process works in a temporary folder of its own (main.cpp), so
// that cases which ctest runs side by side never write the same fixture file.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

TEST_CASE("each test process writes its fixtures in a temporary folder of its own") {
  const std::filesystem::path folder = std::filesystem::temp_directory_path();
  CHECK(folder.filename().string().rfind("normgrad-tests-", 0) == 0);
  REQUIRE(std::getenv("TMPDIR") != nullptr);
  CHECK(std::filesystem::path(std::getenv("TMPDIR")) == folder);
  // Made by this process alone: writable, and holding nothing another process put there.
  const auto probe = folder / ("probe-" + std::to_string(::getpid()));
  std::ofstream(probe) << "x";
  CHECK(std::filesystem::exists(probe));
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(folder)) ++entries;
  CHECK(entries == 1);
  std::filesystem::remove(probe);
}
