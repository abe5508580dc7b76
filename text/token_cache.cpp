#include "text/token_cache.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "base/error.h"
#include "io/atomic_file.h"

namespace normgrad::text {
namespace {

constexpr char magic[9] = "NGIDS001";
constexpr std::size_t fingerprint_size = 16;
// magic, two hashes, fingerprint, three counts
constexpr std::size_t header_size = 8 + 2 * 8 + fingerprint_size + 3 * 8;

template <typename T> void append(std::string& out, const T* values, std::size_t count) {
  out.append(reinterpret_cast<const char*>(values), count * sizeof(T));
}

template <typename T> void append(std::string& out, T value) { append(out, &value, 1); }

// Reads sequentially from a byte buffer whose size has already been checked.
class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  template <typename T> T value() {
    T v;
    std::memcpy(&v, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  template <typename T> std::vector<T> values(std::size_t count) {
    std::vector<T> v(count);
    if (count > 0) std::memcpy(v.data(), bytes_.data() + at_, count * sizeof(T));
    at_ += count * sizeof(T);
    return v;
  }
  std::string text(std::size_t size) {
    std::string t = bytes_.substr(at_, size);
    at_ += size;
    return t;
  }

 private:
  const std::string& bytes_;
  std::size_t at_ = 0;
};

std::uint64_t sum_of(const std::vector<std::uint32_t>& lengths) {
  std::uint64_t total = 0;
  for (auto length : lengths) total += length;
  return total;
}

}  // namespace

std::uint64_t xxh64_of(const std::string& bytes) { return XXH64(bytes.data(), bytes.size(), 0); }

void write_token_cache(const std::string& path, const TokenCacheKey& key,
                       const EncodedCorpus& corpus) {
  if (key.tokenizer_fingerprint.size() != fingerprint_size) {
    throw Error(
        detail::concat("write_token_cache: a tokenizer fingerprint has 16 hex digits, got '",
                       key.tokenizer_fingerprint, "'"));
  }
  std::string out;
  out.reserve(header_size + 8 * corpus.source_lengths.size() +
              4 * (corpus.source_ids.size() + corpus.target_ids.size()) + 8);
  out.append(magic, 8);
  append(out, key.source_hash);
  append(out, key.target_hash);
  out.append(key.tokenizer_fingerprint);
  append<std::uint64_t>(out, corpus.source_lengths.size());
  append<std::uint64_t>(out, corpus.source_ids.size());
  append<std::uint64_t>(out, corpus.target_ids.size());
  append(out, corpus.source_lengths.data(), corpus.source_lengths.size());
  append(out, corpus.target_lengths.data(), corpus.target_lengths.size());
  append(out, corpus.source_ids.data(), corpus.source_ids.size());
  append(out, corpus.target_ids.data(), corpus.target_ids.size());
  append(out, xxh64_of(out));
  io::write_atomically(path, "write_token_cache",
                       [&](const io::FileWriter& writer) { writer.write(out.data(), out.size()); });
}

std::optional<EncodedCorpus> read_token_cache(const std::string& path, const TokenCacheKey& key,
                                              std::string& why) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    why = "no cache yet";
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.eof() && in.fail()) {
    why = "unreadable";
    return std::nullopt;
  }
  if (bytes.size() < header_size + 8 || bytes.compare(0, 8, magic, 8) != 0) {
    why = "damaged: not a token cache";
    return std::nullopt;
  }
  Reader reader(bytes);
  reader.text(8);
  const auto source_hash = reader.value<std::uint64_t>();
  const auto target_hash = reader.value<std::uint64_t>();
  const std::string fingerprint = reader.text(fingerprint_size);
  const auto lines = reader.value<std::uint64_t>();
  const auto source_tokens = reader.value<std::uint64_t>();
  const auto target_tokens = reader.value<std::uint64_t>();

  // The size the counts imply, overflow-checked: a damaged count must not make us read or
  // allocate beyond the file.
  std::uint64_t expected = header_size + 8;
  bool overflow = false;
  for (auto [count, width] :
       {std::pair{lines, 8ULL}, std::pair{source_tokens, 4ULL}, std::pair{target_tokens, 4ULL}}) {
    std::uint64_t part = 0;
    overflow |= __builtin_mul_overflow(count, width, &part);
    overflow |= __builtin_add_overflow(expected, part, &expected);
  }
  if (overflow || expected != bytes.size()) {
    why = detail::concat("damaged: ", bytes.size(), " bytes, but its counts say ",
                         overflow ? "more" : std::to_string(expected));
    return std::nullopt;
  }
  std::uint64_t stored_checksum = 0;
  std::memcpy(&stored_checksum, bytes.data() + bytes.size() - 8, 8);
  if (XXH64(bytes.data(), bytes.size() - 8, 0) != stored_checksum) {
    why = "damaged: its checksum does not match its contents";
    return std::nullopt;
  }
  if (source_hash != key.source_hash) {
    why = "the source text changed";
    return std::nullopt;
  }
  if (target_hash != key.target_hash) {
    why = "the target text changed";
    return std::nullopt;
  }
  if (fingerprint != key.tokenizer_fingerprint) {
    why = "the tokenizer changed";
    return std::nullopt;
  }
  EncodedCorpus corpus;
  corpus.source_lengths = reader.values<std::uint32_t>(lines);
  corpus.target_lengths = reader.values<std::uint32_t>(lines);
  corpus.source_ids = reader.values<std::int32_t>(source_tokens);
  corpus.target_ids = reader.values<std::int32_t>(target_tokens);
  if (sum_of(corpus.source_lengths) != source_tokens ||
      sum_of(corpus.target_lengths) != target_tokens) {
    why = "damaged: its lengths do not add up to its token counts";
    return std::nullopt;
  }
  why.clear();
  return corpus;
}

}  // namespace normgrad::text
