// Times the translation data pipeline on a real parallel corpus (scripts/build_corpus writes
// one): training the joint BPE model, encoding the training text, loading it back from the
// token cache, cutting an epoch into batches, and scoring 2000 test sentences with BLEU and
// chrF. Each time is the median of --repeats runs, beside a floor measured in the same run:
// reading the files' bytes. Prints a table and one JSON line.
//
//   bench_translation_data --corpus out/corpus/debian-en-de --threads 2

#include <normgrad/normgrad.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "text/bleu.h"
#include "text/chrf.h"
#include "text/parallel_dataset.h"
#include "text/text_file.h"
#include "text/translation_batches.h"

namespace {

using namespace normgrad;

double seconds_of(const std::function<void()>& work) {
  const auto start = std::chrono::steady_clock::now();
  work();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median_seconds(int repeats, const std::function<void()>& work) {
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) times.push_back(seconds_of(work));
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// A system output that differs from the reference: every third word dropped, so that the BLEU
// computation does the work of a real, imperfect translation.
std::vector<std::string> degrade(const std::vector<std::string>& lines) {
  std::vector<std::string> out;
  for (const auto& line : lines) {
    std::string kept;
    std::size_t word = 0;
    std::size_t start = 0;
    while (start <= line.size()) {
      std::size_t end = line.find(' ', start);
      if (end == std::string::npos) end = line.size();
      if (word++ % 3 != 2) kept += (kept.empty() ? "" : " ") + line.substr(start, end - start);
      start = end + 1;
    }
    out.push_back(kept);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Times the translation data pipeline: BPE training, encoding, the token cache, batching, "
      "BLEU"};
  std::string corpus = "out/corpus/debian-en-de";
  int threads = 2;
  int repeats = 3;
  std::int32_t vocabulary = 8000;
  app.add_option("--corpus", corpus, "folder with train.en, train.de, test.en, test.de")
      ->check(CLI::ExistingDirectory);
  app.add_option("--threads", threads, "normgrad's threads")->check(CLI::PositiveNumber);
  app.add_option("--repeats", repeats, "timed runs of each step (median)")
      ->check(CLI::PositiveNumber);
  app.add_option("--vocabulary", vocabulary, "BPE vocabulary size")->check(CLI::Range(8, 1000000));
  CLI11_PARSE(app, argc, argv);
  set_num_threads(threads);
  const std::string train_en = corpus + "/train.en", train_de = corpus + "/train.de";
  const std::string test_de = corpus + "/test.de";
  const std::string scratch =
      (std::filesystem::temp_directory_path() / "normgrad_bench_translation").string();
  std::filesystem::create_directories(scratch);

  try {
    const double read_seconds = median_seconds(repeats, [&] {
      text::read_file_bytes(train_en, "bench");
      text::read_file_bytes(train_de, "bench");
    });
    std::optional<text::SubwordTokenizer> tokenizer;
    const double train_seconds = seconds_of([&] {
      tokenizer =
          text::SubwordTokenizer::train({train_en, train_de}, {.vocabulary_size = vocabulary});
    });

    std::size_t pairs = 0;
    const double encode_seconds = median_seconds(repeats, [&] {
      pairs =
          text::ParallelDataset::load(train_en, train_de, *tokenizer, {.use_cache = false}).size();
    });
    const std::string cache = scratch + "/train.ids";
    std::filesystem::remove(cache);
    text::ParallelDataset::load(train_en, train_de, *tokenizer,
                                {.cache_path = cache});  // writes it
    std::string cache_state;
    const double cache_seconds = median_seconds(repeats, [&] {
      cache_state =
          text::ParallelDataset::load(train_en, train_de, *tokenizer, {.cache_path = cache})
              .statistics()
              .cache;
    });
    const auto dataset = text::ParallelDataset::load(train_en, train_de, *tokenizer,
                                                     {.max_length = 80, .cache_path = cache});

    text::TranslationBatches by_sentences(dataset, {.max_sentences = 80, .seed = 1});
    text::TranslationBatches by_tokens(dataset, {.max_tokens = 25000, .seed = 1});
    const double plan_seconds = median_seconds(repeats, [&] { by_sentences.epoch_plan(1); });
    double batch_seconds = median_seconds(repeats, [&] {
      text::TranslationBatches batches(dataset, {.max_sentences = 80, .seed = 1});
      for (std::int64_t b = 0; b < batches.batches_per_epoch(); ++b) batches.next();
    });

    const auto reference = text::strip_line_ends(text::read_text_lines(test_de));
    const auto hypothesis = degrade(reference);
    const std::vector<std::vector<std::string>> references{reference};
    std::string bleu_text, chrf_text;
    const double bleu_seconds = median_seconds(
        repeats, [&] { bleu_text = text::Bleu().corpus_score(hypothesis, references).format(); });
    const double chrf_seconds = median_seconds(
        repeats, [&] { chrf_text = text::Chrf().corpus_score(hypothesis, references).format(); });

    std::printf(
        "corpus %s: %zu training pairs, %zu test sentences, %d threads, median of %d runs\n\n",
        corpus.c_str(), pairs, reference.size(), threads, repeats);
    std::printf("| step | seconds | against reading the text |\n|---|---:|---:|\n");
    std::printf("| reading train.en + train.de (the floor) | %.3f | 1.0x |\n", read_seconds);
    std::printf("| training BPE, vocabulary %d (one run) | %.2f | %.0fx |\n", vocabulary,
                train_seconds, train_seconds / read_seconds);
    std::printf("| encoding the training pairs | %.3f | %.1fx |\n", encode_seconds,
                encode_seconds / read_seconds);
    std::printf("| loading them from the cache (%s) | %.3f | %.1fx |\n", cache_state.c_str(),
                cache_seconds, cache_seconds / read_seconds);
    std::printf("| planning an epoch of 80-sentence batches | %.3f | |\n", plan_seconds);
    std::printf("| an epoch's batch tensors (%lld batches) | %.3f | |\n",
                static_cast<long long>(by_sentences.batches_per_epoch()), batch_seconds);
    std::printf("| BLEU of %zu sentences | %.3f | |\n| chrF2 of %zu sentences | %.3f | |\n",
                reference.size(), bleu_seconds, reference.size(), chrf_seconds);
    std::printf(
        "\npadding share: %.1f%% with 80 sentences a batch (%lld batches), %.1f%% with 25000 "
        "tokens (%lld)\n",
        100 * by_sentences.padding_share(0),
        static_cast<long long>(by_sentences.batches_per_epoch()), 100 * by_tokens.padding_share(0),
        static_cast<long long>(by_tokens.batches_per_epoch()));
    std::printf("%s\n%s\n", bleu_text.c_str(), chrf_text.c_str());
    std::printf(
        "{\"pairs\":%zu,\"threads\":%d,\"read_seconds\":%.4f,\"train_bpe_seconds\":%.3f,\"encode_"
        "seconds\":%.4f,"
        "\"cache_load_seconds\":%.4f,\"plan_seconds\":%.4f,\"epoch_batches_seconds\":%.4f,\"bleu_"
        "seconds\":%.4f,"
        "\"chrf_seconds\":%.4f,\"padding_share_80\":%.4f,\"padding_share_25000\":%.4f}\n",
        pairs, threads, read_seconds, train_seconds, encode_seconds, cache_seconds, plan_seconds,
        batch_seconds, bleu_seconds, chrf_seconds, by_sentences.padding_share(0),
        by_tokens.padding_share(0));
  } catch (const std::exception& error) {
    std::fprintf(stderr, "bench_translation_data: %s\n", error.what());
    return 1;
  }
  return 0;
}
