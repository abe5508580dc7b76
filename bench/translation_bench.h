#pragma once
// What the translation benchmarks (bench_gru_nmt, bench_transformer_nmt) share: their common
// flags, the median of timings, a tokenizer trained once and kept beside the program, the
// first dev sentences and the first batches, the batches written for a PyTorch twin to train
// on the same token ids, and the timing loops of training steps and of decoding passes.

#include <normgrad/normgrad.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "text/subword_tokenizer.h"
#include "text/text_file.h"
#include "text/translation_batches.h"

namespace normgrad::bench {

// The flags both benchmarks take, with their defaults; each program sets its own defaults
// (norm, sentences) before add_to and adds its own flags.
struct TranslationBenchFlags {
  std::string corpus = "out/corpus/debian-en-de", preset = "cpu", norm = "none";
  std::string precision = "float32";
  std::string device = "cpu", tokenizer, batches_path, weights_path;
  int steps = 20, warmup = 2, threads = 0;
  std::int64_t batch_count = 20, vocabulary = 0, sentences = 200, decode_batch = 32;
  bool decode = false;

  // presets: the names --preset takes, described by preset_help; twin: the PyTorch script that
  // reads --write-weights; decoding: what --decode times.
  void add_to(CLI::App& app, const std::vector<std::string>& presets,
              const std::string& preset_help, const std::string& norm_help, const std::string& twin,
              const std::string& decoding) {
    app.add_option("--corpus", corpus, "folder with train.en, train.de, dev.en");
    app.add_option("--preset", preset, preset_help)->check(CLI::IsMember(presets));
    app.add_option("--norm", norm, norm_help);
    app.add_option("--vocabulary", vocabulary, "override the preset's vocabulary size");
    app.add_option("--steps", steps, "timed steps (with --decode: timed passes)")
        ->check(CLI::PositiveNumber);
    app.add_option("--warmup", warmup, "untimed steps (passes) first")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--threads", threads, "threads (0: OMP_NUM_THREADS or all cores)")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--device", device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
    app.add_option("--precision", precision, "float32, or bfloat16 (mixed precision)")
        ->check(CLI::IsMember({"float32", "bfloat16"}));
    app.add_option("--tokenizer", tokenizer,
                   "the tokenizer's file, trained and written when absent (default: beside this "
                   "program, named after the vocabulary size)");
    app.add_option("--batches", batch_count, "distinct batches, trained on in turn")
        ->check(CLI::PositiveNumber);
    app.add_option("--write-batches", batches_path, "save the batches (safetensors) and stop");
    app.add_option("--write-weights", weights_path,
                   "save the model's initial weights (safetensors), for " + twin +
                       " --weights to check that it computes the same function");
    app.add_flag("--decode", decode, "time " + decoding + " instead of training");
    app.add_option("--sentences", sentences, "dev sentences to translate with --decode")
        ->check(CLI::PositiveNumber);
    app.add_option("--decode-batch", decode_batch, "sentences per decoding batch")
        ->check(CLI::PositiveNumber);
  }
};

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
inline text::SubwordTokenizer tokenizer_at(const std::string& path, const std::string& corpus,
                                           std::int64_t vocabulary, const std::string& program) {
  namespace fs = std::filesystem;
  if (fs::exists(path)) return text::SubwordTokenizer::load(path);
  std::cerr << program << ": training a " << vocabulary << "-piece tokenizer into " << path
            << " (once)\n";
  auto tokenizer =
      text::SubwordTokenizer::train({corpus + "/train.en", corpus + "/train.de"},
                                    {.vocabulary_size = static_cast<std::int32_t>(vocabulary)});
  fs::create_directories(fs::path(path).parent_path());
  tokenizer.save(path);
  return tokenizer;
}

// The first `count` non-empty lines of the dev sources, encoded, and their subword count.
inline std::pair<std::vector<std::vector<std::int32_t>>, std::int64_t> dev_sources(
    const text::SubwordTokenizer& tokenizer, const std::string& corpus, std::int64_t count) {
  std::vector<std::vector<std::int32_t>> sources;
  std::int64_t tokens = 0;
  for (const auto& line : text::strip_line_ends(text::read_text_lines(corpus + "/dev.en"))) {
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
inline void write_batches(const std::vector<text::TranslationBatch>& batches,
                          const std::string& path, io::Metadata metadata) {
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
  metadata["pad_id"] = std::to_string(text::pad_id);
  metadata["bos_id"] = std::to_string(text::bos_id);
  io::save_tensors(tensors, path, metadata);
}

// The first batches of a seeded training order, and their token counts.
struct FirstBatches {
  std::vector<text::TranslationBatch> batches;
  std::int64_t target_tokens = 0, padded_tokens = 0;
};

inline FirstBatches first_batches(text::TranslationBatches& batcher, std::int64_t count) {
  FirstBatches first;
  for (std::int64_t i = 0; i < count; ++i) {
    first.batches.push_back(batcher.next());
    first.target_tokens += first.batches.back().target_tokens;
    first.padded_tokens += first.batches.back().padded_tokens;
  }
  return first;
}

struct TimedSteps {
  std::vector<double> seconds;                 // the timed steps'
  std::vector<double> losses, gradient_norms;  // every step's, the untimed ones first
};

// warmup + steps calls of step(batch) over the batches in turn, the first warmup untimed, a
// CUDA device synchronised before each clock reading; step returns .loss and .gradient_norm.
template <class Step>
TimedSteps time_steps(const FirstBatches& first, int warmup, int steps, Device device,
                      Step&& step) {
  TimedSteps timed;
  const auto count = first.batches.size();
  for (int i = 0; i < warmup + steps; ++i) {
    const auto& batch = first.batches[static_cast<std::size_t>(i) % count];
    const auto start = std::chrono::steady_clock::now();
    const auto result = step(batch);
    if (device.is_cuda()) cuda::synchronize(device.index);
    const double elapsed = seconds_since(start);
    if (i >= warmup) timed.seconds.push_back(elapsed);
    timed.losses.push_back(result.loss);
    timed.gradient_norms.push_back(result.gradient_norm);
  }
  return timed;
}

// A training run's figures into report: the batches' mean token counts, every step's loss and
// gradient norm, the timed steps' seconds, their median and its steps per second.
inline void add_training_report(nlohmann::ordered_json& report, const FirstBatches& first,
                                const TimedSteps& timed) {
  const auto count = static_cast<double>(first.batches.size());
  const double seconds = median(timed.seconds);
  report["mode"] = "train";
  report["batches"] = first.batches.size();
  report["mean_target_tokens"] = static_cast<double>(first.target_tokens) / count;
  report["mean_padded_tokens"] = static_cast<double>(first.padded_tokens) / count;
  report["losses"] = timed.losses;
  report["gradient_norms"] = timed.gradient_norms;
  report["step_seconds"] = timed.seconds;
  report["median_seconds"] = seconds;
  report["steps_per_second"] = 1.0 / seconds;
}

// warmup + passes translations of sources, the first warmup untimed; translate(sources)
// returns the n-best lists. The passes' seconds, their median, sentences per second and the
// mean length of the best translations in subwords.
template <class Translate>
nlohmann::ordered_json time_decoding(const text::SubwordTokenizer& tokenizer,
                                     const std::vector<std::vector<std::int32_t>>& sources,
                                     int warmup, int passes, Translate&& translate) {
  std::vector<double> times;
  std::int64_t output_tokens = 0;
  for (int pass = 0; pass < warmup + passes; ++pass) {
    const auto start = std::chrono::steady_clock::now();
    const auto translations = translate(sources);
    if (pass >= warmup) times.push_back(seconds_since(start));
    output_tokens = 0;
    for (const auto& n_best : translations)
      output_tokens += static_cast<std::int64_t>(tokenizer.encode(n_best.front().text).size());
  }
  const double seconds = median(times);
  const auto count = static_cast<double>(sources.size());
  return {{"pass_seconds", times},
          {"median_seconds", seconds},
          {"sentences_per_second", count / seconds},
          {"mean_output_subwords", static_cast<double>(output_tokens) / count}};
}

}  // namespace normgrad::bench
