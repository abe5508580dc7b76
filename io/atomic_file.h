#pragma once
// Files that are either whole or absent: the bytes go to a temporary file beside the target,
// which is flushed to disk and then renamed over the target, so a crash at any moment leaves
// the previous file untouched (or no file), never a partial one.
//
//   write_atomically("model.safetensors", "save", [&](const FileWriter& out) {
//     out.write(header.data(), header.size());
//     ...
//   });
//
// Temporaries are named ".<target name>.tmp-<host>-<pid>-<16 hex digits>": recognisable as
// belonging to their target, unique per writer, and telling which process wrote them. They are
// removed on every error path; a writer that is killed (SIGKILL, power loss) cannot remove its
// own, so each save first removes the temporaries of the same target whose writer, on this
// host, has exited. After any number of killed saves at most one temporary (the last one's)
// remains until the next save.
//
// The file is created with its final mode, 0666 less the process's umask, as open(2) does for
// any new file: there is no moment at which it has other permissions.

#include <cstddef>
#include <functional>
#include <string>

namespace normgrad::io {

// Appends bytes to the temporary file being written; throws Error (naming `op` and the file)
// when the system refuses.
class FileWriter {
 public:
  FileWriter(int fd, std::string path, const char* op) : fd_(fd), path_(std::move(path)), op_(op) {}
  void write(const void* bytes, std::size_t size) const;
  const std::string& path() const { return path_; }

 private:
  int fd_;
  std::string path_;
  const char* op_;
};

// Makes `path` hold exactly what `write` writes, or leaves it as it was and throws. `op` names
// the calling operation in error messages ("save").
void write_atomically(const std::string& path, const char* op,
                      const std::function<void(const FileWriter&)>& write);

// Removes the temporaries of `path` left by writers on this host that have exited; returns how
// many were removed. Temporaries of live writers, and of other hosts (a shared folder), stay.
int remove_stale_temporaries(const std::string& path);

// The prefix every temporary of `path` starts with: ".<name>.tmp-".
std::string temporary_prefix(const std::string& path);

// "<what> '<path>': <strerror(errno)>": the message of a failed file operation, read from errno
// right after the call that failed.
std::string file_error(const char* what, const std::string& path);

}  // namespace normgrad::io
