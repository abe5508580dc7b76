// Files from someone else: checkpoints and datasets whose headers lie about their sizes,
// repeat names, or point at directories are refused with an Error that names the file and the
// fault, before anything large is allocated; flipped bits in checkpoint data are caught by the
// checksums; killed saves leave at most one temporary file, and saves honour the umask.

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "helpers.h"
#include "io/atomic_file.h"
#include "sanitizer.h"

using namespace normgrad;
using testing::all_close;
namespace fs = std::filesystem;

namespace {

struct Folder {
  fs::path path;
  Folder() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("normgrad-hostile-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::create_directories(path);
  }
  ~Folder() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

std::string read_bytes(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// A safetensors file with this header text followed by `data`.
std::string safetensors_file(const std::string& header, const std::string& data) {
  std::string bytes(8, '\0');
  const std::uint64_t length = header.size();
  std::memcpy(bytes.data(), &length, 8);
  return bytes + header + data;
}

// The names in `folder` that start with `prefix`.
int count_with_prefix(const fs::path& folder, const std::string& prefix) {
  int count = 0;
  for (const auto& entry : fs::directory_iterator(folder))
    count += entry.path().filename().string().rfind(prefix, 0) == 0;
  return count;
}

std::string host_name() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

// An IDX header: magic 0 0 8 <dims>, then each dim big-endian.
std::string idx_header(const std::vector<std::uint32_t>& dims) {
  std::string bytes = {0, 0, 8, static_cast<char>(dims.size())};
  for (const std::uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<char>(d >> shift));
  return bytes;
}

void write_gzip(const std::string& path, const std::string& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  REQUIRE(file != nullptr);
  REQUIRE(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())) > 0);
  gzclose(file);
}

}  // namespace

TEST_CASE("safetensors shapes whose byte count overflows are refused, naming the tensor") {
  Folder folder;
  const std::string path = folder.file("shape.safetensors");
  // [2^61 + 1] float64: 8 × (2^61 + 1) wraps to 8, the size of the data.
  write_bytes(path, safetensors_file(
                        R"({"t":{"dtype":"F64","shape":[2305843009213693953],"data_offsets":[0,8]}})",
                        std::string(8, '\0')));
  CHECK_ERROR(io::load_tensors(path), "load", "shape.safetensors", "tensor 't'",
              "2305843009213693953", "2^48");
  // [2^62 + 1, 4] float32: the element count itself wraps.
  write_bytes(path,
              safetensors_file(
                  R"({"t":{"dtype":"F32","shape":[4611686018427387905,4],"data_offsets":[0,16]}})",
                  std::string(16, '\0')));
  CHECK_ERROR(io::load_tensors(path), "load", "tensor 't'",
              "more elements than an int64 can count");
  // Sizes outside [0, 2^63): negative, above int64, above uint64 (parsed as a float).
  for (const char* shape : {"[-1]", "[9223372036854775808]", "[1e30]", "[2.5]"}) {
    write_bytes(path, safetensors_file(std::string(R"({"t":{"dtype":"F32","shape":)") + shape +
                                           R"(,"data_offsets":[0,0]}})",
                                       ""));
    CHECK_ERROR(io::load_tensors(path), "load", "tensor 't'", "not an integer in [0, 2^63)");
  }
}

TEST_CASE("safetensors headers with repeated or empty names, or too long, are refused") {
  Folder folder;
  const std::string path = folder.file("names.safetensors");
  const std::string entry = R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
  write_bytes(path, safetensors_file(R"({"a":)" + entry + R"(,"a":)" + entry + "}",
                                     std::string(4, '\0')));
  CHECK_ERROR(io::load_tensors(path), "load", "names.safetensors", "names 'a' twice");
  write_bytes(path, safetensors_file(R"({"a":)" + entry +
                                         R"(,"__metadata__":{"k":"1","k":"2"}})",
                                     std::string(4, '\0')));
  CHECK_ERROR(io::load_tensors(path), "load", "names 'k' twice");
  write_bytes(path, safetensors_file(R"({"":)" + entry + "}", std::string(4, '\0')));
  CHECK_ERROR(io::load_tensors(path), "load", "empty name");
  CHECK_ERROR(io::save_tensors({{"", ones({1})}}, path), "save", "empty name");

  // A header of 150 MB (a sparse file: nothing is written but its length) is refused before
  // it is read.
  const std::uint64_t length = 150'000'000;
  std::string prefix(8, '\0');
  std::memcpy(prefix.data(), &length, 8);
  write_bytes(path, prefix);
  fs::resize_file(path, 8 + length);
  CHECK_ERROR(io::load_tensors(path), "load", "150000000 bytes", "100000000 bytes allowed");
}

TEST_CASE("directories are refused by every reader and writer with an Error") {
  Folder folder;
  const std::string dir = folder.file("a.safetensors");
  fs::create_directories(dir);
  CHECK_ERROR(io::load_tensors(dir), "load", "a.safetensors", "is a directory");
  auto model = std::make_shared<nn::Linear>(2, 2);
  CHECK_ERROR(io::load(*model, dir), "load", "is a directory");
  CHECK_ERROR(io::save(*model, dir), "save", "a.safetensors", "is a directory");
  CHECK_ERROR(data::read_idx(dir), "read_idx", "a.safetensors", "is a directory");
}

TEST_CASE("checksums catch a flipped bit in the data, and an option skips them") {
  Folder folder;
  const std::string path = folder.file("sum.safetensors");
  const Tensor a = arange(0, 16, 1, {.dtype = DType::Float32}), b = full({3}, 2.5);
  io::save_tensors({{"a", a}, {"b", b}}, path, {{"note", "kept"}});

  // The stored checksum is XXH64 (seed 0) of the tensor's bytes, as 16 hex digits.
  io::Metadata metadata;
  io::load_tensors(path, &metadata);
  CHECK(metadata == io::Metadata{{"note", "kept"}});  // checksums are not handed back
  const std::string bytes = read_bytes(path);
  char expected[17];
  std::snprintf(expected, sizeof expected, "%016llx",
                static_cast<unsigned long long>(XXH64(a.data_ptr<float>(), 64, 0)));
  CHECK(bytes.find(std::string("\"normgrad.xxh64.a\":\"") + expected + "\"") != std::string::npos);

  std::string flipped = bytes;
  flipped[flipped.size() - 30] ^= 0x04;  // a bit inside a's data
  write_bytes(path, flipped);
  CHECK_ERROR(io::load_tensors(path), "load", "sum.safetensors", "tensor 'a'",
              "do not match its checksum", "corrupted");
  const nn::StateDict unchecked = io::load_tensors(path, nullptr, {.verify_checksums = false});
  CHECK_FALSE(all_close(unchecked.at("a"), a, 0, 0));
  CHECK(all_close(unchecked.at("b"), b, 0, 0));

  // Checksums must be all there or not at all, and name tensors the file holds.
  std::string renamed = bytes;
  renamed.replace(renamed.find("normgrad.xxh64.b"), 16, "normgrad.xxh64.z");
  write_bytes(path, renamed);
  CHECK_ERROR(io::load_tensors(path), "load", "checksum for 'z'", "does not hold");
  std::string dropped = bytes;
  dropped.replace(dropped.find("normgrad.xxh64.b"), 16, "normgrad_xxh64_b");
  write_bytes(path, dropped);
  CHECK_ERROR(io::load_tensors(path), "load", "1 checksums for 2 tensors");
  CHECK_ERROR(io::save_tensors({{"a", a}}, path, {{"normgrad.xxh64.a", "0"}}), "save",
              "'normgrad.xxh64.a' is reserved");

  // A file without checksums (another writer's) loads.
  write_bytes(path, safetensors_file(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                                     std::string(4, '\0')));
  CHECK(io::load_tensors(path).at("x").item() == 0.0);
}

TEST_CASE("a saved file has 0666 less the umask from its creation") {
  Folder folder;
  const std::string path = folder.file("mode.safetensors");
  const mode_t previous = ::umask(022);
  io::save_tensors({{"a", ones({2})}}, path);
  struct stat info {};
  REQUIRE(::stat(path.c_str(), &info) == 0);
  CHECK((info.st_mode & 0777) == 0644);
  ::umask(077);
  fs::remove(path);
  io::save_tensors({{"a", ones({2})}}, path);
  REQUIRE(::stat(path.c_str(), &info) == 0);
  CHECK((info.st_mode & 0777) == 0600);
  ::umask(previous);
}

TEST_CASE("saves killed mid-write leave at most one temporary, removed by the next save") {
  Folder folder;
  const std::string path = folder.file("killed.safetensors");
  const std::string prefix = io::temporary_prefix(path);
  CHECK(prefix == ".killed.safetensors.tmp-");
  const nn::StateDict state{{"w", full({1 << 21}, 1.0)}};  // 8 MB
  for (int kill = 0; kill < 12; ++kill) {
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      for (;;) io::save_tensors(state, path);  // killed from outside
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + 7 * kill));
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    CHECK(count_with_prefix(folder.path, prefix) <= 1);
  }
  io::save_tensors(state, path);
  CHECK(count_with_prefix(folder.path, prefix) == 0);
  CHECK(io::load_tensors(path).at("w").numel() == 1 << 21);
}

TEST_CASE("only temporaries of exited writers on this host are removed") {
  Folder folder;
  const std::string path = folder.file("m.safetensors");
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);  // its pid now names no process
  const std::string host = host_name(), prefix = io::temporary_prefix(path);
  const std::string dead = folder.file(prefix + host + "-" + std::to_string(child) +
                                       "-0123456789abcdef"),
                    live = folder.file(prefix + host + "-" + std::to_string(::getpid()) +
                                       "-0123456789abcdef"),
                    elsewhere = folder.file(prefix + "another-host-" + std::to_string(child) +
                                            "-0123456789abcdef"),
                    unrelated = folder.file(prefix + "notes");
  for (const std::string& file : {dead, live, elsewhere, unrelated}) write_bytes(file, "x");
  io::save_tensors({{"a", ones({1})}}, path);
  CHECK_FALSE(fs::exists(dead));
  CHECK(fs::exists(live));
  CHECK(fs::exists(elsewhere));
  CHECK(fs::exists(unrelated));
}

TEST_CASE("a save that fails while writing removes its temporary") {
  Folder folder;
  const std::string path = folder.file("full.safetensors");
  // In a child limited to 64 KiB files, a 1 MB save fails at write (EFBIG). The tensor is
  // made before the fork: a forked child cannot use the parent's OpenMP threads.
  const nn::StateDict state{{"w", ones({1 << 18})}};
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{1 << 16, 1 << 16};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    const std::string message =
        testing::error_of([&] { io::save_tensors(state, path); });
    ::_exit(message.find("save: cannot write") != std::string::npos ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  CHECK(fs::is_empty(folder.path));
}

TEST_CASE("IDX headers that overflow or claim more than the file holds are refused early") {
  Folder folder;
  const std::string path = folder.file("lie-idx3-ubyte");
  write_bytes(path, idx_header({65536, 65536, 65536, 65536}));  // 2^64 values: wraps to 0
  CHECK_ERROR(data::read_idx(path), "read_idx", "lie-idx3-ubyte", "2^64 or more");
  write_bytes(path, idx_header({65536, 65536}));  // 4 GiB: above the cap
  CHECK_ERROR(data::read_idx(path), "read_idx", "4294967296 values", "2147483648");
  // 1 GiB claimed by a 16-byte file: refused from the file's size, before allocating.
  write_bytes(path, idx_header({1024, 1024, 1024}));
  CHECK_ERROR(data::read_idx(path), "read_idx", "truncated", "1073741824 values",
              "only 0 bytes follow");
  // The same claim in a gzip stream of 26 bytes: read as data arrive.
  write_gzip(path + ".gz", idx_header({1024, 1024, 1024}) + std::string(10, 'x'));
  CHECK_ERROR(data::read_idx(path + ".gz"), "read_idx", "truncated", "1073741824 bytes",
              "only 10 are there");
}

// AddressSanitizer reserves terabytes of address space, so a limit on it cannot be tested there.
using testing::under_address_sanitizer;

// The message of the Error that `body` throws in a child process whose address space ends
// `headroom_mib` MiB above what it uses when the body starts: "" if it throws none, and
// "(the child died)" if it crashes or throws anything else.
template <typename Body> std::string error_with_little_memory(long long headroom_mib, Body&& body) {
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(pipe_fds[0]);
    empty_cache();  // blocks cached by earlier tests would serve allocations without a fault
    std::ifstream status("/proc/self/status");
    std::string line;
    long long used_kib = 0;
    while (std::getline(status, line))
      if (line.rfind("VmSize:", 0) == 0) used_kib = std::stoll(line.substr(7));
    const rlim_t limit = static_cast<rlim_t>(used_kib + (headroom_mib << 10)) * 1024;
    const rlimit bounds{limit, limit};
    ::setrlimit(RLIMIT_AS, &bounds);
    const std::string message = testing::error_of(body);
    const bool written =
        ::write(pipe_fds[1], message.data(), message.size()) == static_cast<ssize_t>(message.size());
    ::_exit(written ? 0 : 1);
  }
  ::close(pipe_fds[1]);
  std::string message;
  char buffer[4096];
  for (ssize_t got; (got = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;)
    message.append(buffer, static_cast<std::size_t>(got));
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? message : "(the child died)";
}

TEST_CASE("running out of memory while reading an IDX stream is an Error") {
  if (under_address_sanitizer) {
    MESSAGE("skipped: AddressSanitizer reserves more address space than the limit allows");
    return;
  }
  Folder folder;
  const std::string path = folder.file("bomb-idx1-ubyte.gz");
  // 1 GiB of zeros, compressed to about a megabyte.
  gzFile file = gzopen(path.c_str(), "wb1");
  REQUIRE(file != nullptr);
  const std::string header = idx_header({1u << 30});
  gzwrite(file, header.data(), static_cast<unsigned>(header.size()));
  const std::string zeros(1 << 24, '\0');
  for (int i = 0; i < 64; ++i) gzwrite(file, zeros.data(), static_cast<unsigned>(zeros.size()));
  gzclose(file);
  const std::string message = error_with_little_memory(256, [&] { data::read_idx(path); });
  CHECK(message.find("out of memory allocating 1073741824 bytes") != std::string::npos);
}

TEST_CASE("running out of memory while converting MNIST images is an Error naming the file") {
  if (under_address_sanitizer) {
    MESSAGE("skipped: AddressSanitizer reserves more address space than the limit allows");
    return;
  }
  Folder folder;
  // 100000 images of 28 x 28: 78 MB of bytes, 314 MB as float32.
  data::IdxArray images{{100000, 28, 28}, std::vector<std::uint8_t>(100000 * 28 * 28, 7)};
  data::write_idx(folder.file("t10k-images-idx3-ubyte"), images);
  data::write_idx(folder.file("t10k-labels-idx1-ubyte"),
                  {{100000}, std::vector<std::uint8_t>(100000, 3)});
  images = {};
  // 200 MiB more address space: the bytes fit, the floats do not.
  const std::string message = error_with_little_memory(
      200, [&] { data::load_mnist(folder.path.string(), data::Split::Test); });
  CHECK(message.find("load_mnist") != std::string::npos);
  CHECK(message.find("t10k-images-idx3-ubyte") != std::string::npos);
  CHECK(message.find("out of memory") != std::string::npos);
}

TEST_CASE("an MNIST folder whose image dims overflow is refused") {
  Folder folder;
  // No images, each of (2^32 - 1)^2 pixels: the file holds nothing, the product wraps.
  write_bytes(folder.file("t10k-images-idx3-ubyte"), idx_header({0, 4294967295u, 4294967295u}));
  write_bytes(folder.file("t10k-labels-idx1-ubyte"), idx_header({0}));
  CHECK_ERROR(data::load_mnist(folder.path.string(), data::Split::Test), "load_mnist",
              "4294967295 x 4294967295", "2147483648 pixels");
}
