#pragma once
// What the translation benchmarks (bench_gru_nmt, bench_transformer_nmt) share: the median of
// timings, a tokenizer trained once and kept beside the program, the first dev sentences, and
// the batches written for a PyTorch twin to train on the same token ids.

#include <normgrad/normgrad.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "data/subword_tokenizer.h"
#include "data/text_file.h"
#include "data/translation_batches.h"

namespace normgrad::bench {

inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  if (n == 0) return 0;
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Where the translation benchmarks keep a tokenizer of `vocabulary` pieces by default: beside
// the program, as translation_tokenizer_<vocabulary>.model, one file for both (they train it
// alike on the same corpus).
inline std::string default_tokenizer_path(std::int64_t vocabulary) {
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() /
          ("translation_tokenizer_" + std::to_string(vocabulary) + ".model"))
      .string();
}

// The tokenizer of `vocabulary` pieces: loaded from `path`, or trained on the corpus's training
// text (as the programs' train trains it) and saved there first. Training takes a minute or more.
inline data::SubwordTokenizer tokenizer_at(const std::string& path, const std::string& corpus,
                                           std::int64_t vocabulary, const std::string& program) {
  namespace fs = std::filesystem;
  if (fs::exists(path)) return data::SubwordTokenizer::load(path);
  std::cerr << program << ": training a " << vocabulary << "-piece tokenizer into " << path
            << " (once)\n";
  auto tokenizer =
      data::SubwordTokenizer::train({corpus + "/train.en", corpus + "/train.de"},
                                    {.vocabulary_size = static_cast<std::int32_t>(vocabulary)});
  fs::create_directories(fs::path(path).parent_path());
  tokenizer.save(path);
  return tokenizer;
}

// The first `count` non-empty lines of the dev sources, encoded, and their subword count.
inline std::pair<std::vector<std::vector<std::int32_t>>, std::int64_t> dev_sources(
    const data::SubwordTokenizer& tokenizer, const std::string& corpus, std::int64_t count) {
  std::vector<std::vector<std::int32_t>> sources;
  std::int64_t tokens = 0;
  for (const auto& line : data::strip_line_ends(data::read_text_lines(corpus + "/dev.en"))) {
    if (line.empty()) continue;
    sources.push_back(tokenizer.encode(line));
    tokens += static_cast<std::int64_t>(sources.back().size());
    if (static_cast<std::int64_t>(sources.size()) == count) break;
  }
  return {std::move(sources), tokens};
}

// The batches' token ids and lengths under the names the twins read: batch.<i>.source,
// .source_lengths, .target_input, .target_output, .target_lengths; `metadata` besides the
// batch count and the pad and bos ids.
inline void write_batches(const std::vector<data::TranslationBatch>& batches,
                          const std::string& path, nn::Metadata metadata) {
  nn::StateDict tensors;
  for (std::size_t i = 0; i < batches.size(); ++i) {
    const std::string prefix = "batch." + std::to_string(i) + ".";
    const auto& batch = batches[i];
    tensors[prefix + "source"] = batch.source;
    tensors[prefix + "source_lengths"] = batch.source_lengths;
    tensors[prefix + "target_input"] = batch.target_input;
    tensors[prefix + "target_output"] = batch.target_output;
    tensors[prefix + "target_lengths"] = batch.target_lengths;
  }
  metadata["batches"] = std::to_string(batches.size());
  metadata["pad_id"] = std::to_string(data::pad_id);
  metadata["bos_id"] = std::to_string(data::bos_id);
  nn::save_tensors(tensors, path, metadata);
}

}  // namespace normgrad::bench
