#include "io/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>

#include "base/error.h"

namespace normgrad::io {

namespace fs = std::filesystem;

namespace {

fs::path folder_of(const std::string& path) {
  const fs::path target(path);
  return target.has_parent_path() ? target.parent_path() : fs::path(".");
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  // A temporary's name is parsed from the right, so the host may hold any character but '/'.
  std::string host(name);
  for (char& c : host)
    if (c == '/') c = '_';
  return host;
}

// 64 random bits as 16 hex digits: two writers in one process (threads) never collide.
std::string random_suffix() {
  static thread_local std::mt19937_64 bits{std::random_device{}()};
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(bits()));
  return hex;
}

// Parses "<host>-<pid>-<16 hex>" (what follows the prefix); false for any other form.
bool parse_writer(const std::string& rest, std::string& host, pid_t& pid) {
  const std::size_t last = rest.rfind('-');
  if (last == std::string::npos || rest.size() - last - 1 != 16) return false;
  const std::size_t middle = rest.rfind('-', last - 1);
  if (middle == std::string::npos || middle == 0 || middle + 1 == last) return false;
  long long value = 0;
  for (std::size_t i = middle + 1; i < last; ++i) {
    if (rest[i] < '0' || rest[i] > '9' || value > 1'000'000'000) return false;
    value = value * 10 + (rest[i] - '0');
  }
  host = rest.substr(0, middle);
  pid = static_cast<pid_t>(value);
  return value > 0;
}

void flush_folder(const fs::path& folder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // the rename is done; only its durability is at stake
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

std::string temporary_prefix(const std::string& path) {
  // Appended piece by piece: GCC 12 at -O3 warns falsely (-Wrestrict) about "." + string.
  std::string prefix = ".";
  prefix += fs::path(path).filename().string();
  prefix += ".tmp-";
  return prefix;
}

void FileWriter::write(const void* data, std::size_t size) const {
  const char* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t written = ::write(fd_, bytes, std::min<std::size_t>(size, std::size_t{1} << 30));
    if (written < 0 && errno == EINTR) continue;
    NG_CHECK(written > 0, op_, file_error("cannot write", path_));
    bytes += written;
    size -= static_cast<std::size_t>(written);
  }
}

int remove_stale_temporaries(const std::string& path) {
  const std::string prefix = temporary_prefix(path), host = host_name();
  std::error_code error;
  fs::directory_iterator entries(folder_of(path), error);
  if (error) return 0;
  int removed = 0;
  for (const fs::directory_entry& entry : entries) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    std::string writer_host;
    pid_t pid = 0;
    if (!parse_writer(name.substr(prefix.size()), writer_host, pid) || writer_host != host)
      continue;
    // ESRCH: no such process. EPERM means it exists under another user: leave it.
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;
    if (::unlink(entry.path().c_str()) == 0) ++removed;
  }
  return removed;
}

void write_atomically(const std::string& path, const char* op,
                      const std::function<void(const FileWriter&)>& write) {
  const fs::path folder = folder_of(path);
  std::error_code error;
  NG_CHECK(!fs::is_directory(path, error), op, "'", path, "' is a directory");
  remove_stale_temporaries(path);

  const std::string stem = (folder / temporary_prefix(path)).string() + host_name() + "-" +
                           std::to_string(::getpid()) + "-";
  std::string temporary;
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 8; ++attempt) {
    temporary = stem + random_suffix();
    // O_EXCL: never reuse or follow an existing name. Mode 0666 is reduced by the umask as
    // the file is created, so it has its final permissions from the start.
    fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  NG_CHECK(fd >= 0, op, file_error("cannot create a temporary file in", folder.string()));
  try {
    write(FileWriter(fd, temporary, op));
    NG_CHECK(::fsync(fd) == 0, op, file_error("cannot flush", temporary));
    const int closed = ::close(fd);
    fd = -1;
    NG_CHECK(closed == 0, op, file_error("cannot close", temporary));
    NG_CHECK(::rename(temporary.c_str(), path.c_str()) == 0, op,
             file_error("cannot rename the temporary file over", path));
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(temporary.c_str());
    throw;
  }
  flush_folder(folder);
}

std::string file_error(const char* what, const std::string& path) {
  return ::normgrad::detail::concat(what, " '", path, "': ", std::strerror(errno));
}

}  // namespace normgrad::io
