// Times examples/gru_nmt's RnnSearch on real batches of a corpus built by scripts/build_corpus:
// whole training steps (gru_nmt::train_step: zero_grad, forward, cross-entropy with label
// smoothing 0.1 summed per sentence, backward, clipping at global norm 1, Adam), or, with
// --decode, translating dev sentences with beam 5 and greedily. Prints one JSON line.
//
//   bench_gru_nmt --corpus out/corpus/debian-en-de --preset cpu --norm rmsnorm --steps 20
//   {"framework":"normgrad","model":"gru_nmt","preset":"cpu","norm":"rmsnorm",...,
//    "step_seconds":[...],"median_seconds":...,"steps_per_second":...,"first_loss":...}
//   bench_gru_nmt --corpus ... --write-batches build/gru_nmt_batches_cpu.safetensors
//   bench_gru_nmt --corpus ... --decode --sentences 400
//
// The batches are the first --batches batches of TranslationBatches over the training text
// (batch 80 sentences, seed 1, pairs of at most 80 subwords), the same on every run; step s
// (warm-up steps counted) trains on batch s mod --batches. --write-batches saves them, so that
// bench_gru_nmt_torch.py trains on exactly the same token ids in the same order. With
// --write-weights, the model's initial weights are saved too; the twin started from them
// (--weights) prints the same losses and gradient norms, to float32 rounding: the check that it
// is the same model.
//
// The tokenizer is a joint BPE model of the preset's vocabulary trained on the training text
// (as gru_nmt train trains it). Training it takes a minute or more, so it is kept in --tokenizer
// (by default beside this program, named after the vocabulary size) and trained only when that file
// is absent; the token ids are cached beside it, not in the corpus folder.
//
// Decoding uses untrained weights (the model's seeded initialisation): the speed of a search
// does not depend on what the weights have learnt, but its length does, so every hypothesis is
// limited as gru_nmt translate limits it, to 2 x source length + 10 tokens, and the report
// gives the mean output length beside the rate.

#include <normgrad/normgrad.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "data/parallel_dataset.h"
#include "data/translation_batches.h"
#include "gru_nmt/model.h"
#include "gru_nmt/settings.h"
#include "gru_nmt/training.h"
#include "gru_nmt/translation.h"
#include "process_memory.h"
#include "translation_bench.h"

namespace {

using namespace normgrad;
using normgrad::bench::median;
using normgrad::bench::peak_resident_bytes;
using normgrad::bench::resident_bytes;
using normgrad::bench::seconds_since;

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Times training steps or decoding of gru_nmt's RnnSearch on a real corpus"};
  std::string corpus = "out/corpus/debian-en-de", preset_name = "cpu", norm = "none";
  std::string device_name = "cpu", tokenizer_path, batches_path, weights_path;
  int steps = 20, warmup = 2, threads = 0;
  std::int64_t batch_sentences = 80, batch_count = 20, vocabulary = 0, sentences = 400,
               decode_batch = 32;
  bool decode = false;
  app.add_option("--corpus", corpus, "folder with train.en, train.de, dev.en");
  app.add_option("--preset", preset_name,
                 "cpu: E128 H256 V8000; small: E64 H128 V4000; paper: E512 H1024 V32000")
      ->check(CLI::IsMember({"cpu", "small", "paper"}));
  app.add_option("--norm", norm, "none, layernorm, l2norm, rmsnorm, prmsnorm:0.0625, ...");
  app.add_option("--vocabulary", vocabulary, "override the preset's vocabulary size");
  app.add_option("--steps", steps, "timed steps (with --decode: timed passes)")
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "untimed steps (passes) first")->check(CLI::NonNegativeNumber);
  app.add_option("--threads", threads, "threads (0: OMP_NUM_THREADS or all cores)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--device", device_name, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--tokenizer", tokenizer_path,
                 "the tokenizer's file, trained and written when absent (default: beside this "
                 "program, named after the vocabulary size)");
  app.add_option("--batch", batch_sentences, "sentences per batch")->check(CLI::PositiveNumber);
  app.add_option("--batches", batch_count, "distinct batches, trained on in turn")
      ->check(CLI::PositiveNumber);
  app.add_option("--write-batches", batches_path, "save the batches (safetensors) and stop");
  app.add_option("--write-weights", weights_path,
                 "save the model's initial weights (safetensors), for bench_gru_nmt_torch.py "
                 "--weights to check that it computes the same function");
  app.add_flag("--decode", decode, "time translation (beam 5 and greedy) instead of training");
  app.add_option("--sentences", sentences, "dev sentences to translate with --decode")
      ->check(CLI::PositiveNumber);
  app.add_option("--decode-batch", decode_batch, "sentences per decoding batch")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  try {
    if (threads > 0) set_num_threads(threads);
    const Device device = device_name == "cuda" ? Device::cuda() : Device::cpu();
    // The presets of gru_nmt train (examples/gru_nmt/settings.h).
    const gru_nmt::Settings settings = gru_nmt::preset(preset_name);
    gru_nmt::ModelConfig sizes = settings.model;
    if (vocabulary > 0) sizes.vocabulary_size = vocabulary;
    if (tokenizer_path.empty())
      tokenizer_path = bench::default_tokenizer_path(sizes.vocabulary_size);
    const auto tokenizer =
        bench::tokenizer_at(tokenizer_path, corpus, sizes.vocabulary_size, "bench_gru_nmt");

    nlohmann::ordered_json report{{"framework", "normgrad"},
                                  {"model", "gru_nmt"},
                                  {"preset", preset_name},
                                  {"norm", norm},
                                  {"device", device_name},
                                  {"threads", get_num_threads()},
                                  {"embedding", sizes.embedding_size},
                                  {"hidden", sizes.hidden_size},
                                  {"vocabulary", sizes.vocabulary_size}};
    Generator generator(1);
    const gru_nmt::ModelConfig config{.vocabulary_size = sizes.vocabulary_size,
                                      .embedding_size = sizes.embedding_size,
                                      .hidden_size = sizes.hidden_size,
                                      .norm = norm};

    if (decode) {
      const auto [sources, source_tokens] = bench::dev_sources(tokenizer, corpus, sentences);
      gru_nmt::RnnSearch model(config, generator);
      if (!device.is_cpu()) model.to(device);
      report["mode"] = "decode";
      report["weights"] = "untrained (seed 1)";
      report["sentences"] = sources.size();
      report["source_tokens"] = source_tokens;
      report["max_length"] = "2 x source + 10";
      for (const std::int64_t beam : {5, 1}) {
        const decoding::BeamSearchOptions options = gru_nmt::search_options(beam);
        std::vector<double> times;
        std::int64_t output_tokens = 0;
        for (int pass = 0; pass < warmup + steps; ++pass) {
          const auto start = std::chrono::steady_clock::now();
          const auto translations =
              gru_nmt::translate_n_best(model, tokenizer, sources, options, decode_batch, device);
          if (pass >= warmup) times.push_back(seconds_since(start));
          output_tokens = 0;
          for (const auto& n_best : translations)
            output_tokens +=
                static_cast<std::int64_t>(tokenizer.encode(n_best.front().text).size());
        }
        const double seconds = median(times);
        report[beam == 1 ? "greedy" : "beam5"] = {
            {"pass_seconds", times},
            {"median_seconds", seconds},
            {"sentences_per_second", static_cast<double>(sources.size()) / seconds},
            {"mean_output_subwords",
             static_cast<double>(output_tokens) / static_cast<double>(sources.size())}};
      }
      std::cout << report.dump() << "\n";
      return 0;
    }

    const auto train = data::ParallelDataset::load(
        corpus + "/train.en", corpus + "/train.de", tokenizer,
        {.max_length = 80, .cache_path = tokenizer_path + ".train.ids"});
    data::TranslationBatches batcher(train, {.max_sentences = batch_sentences, .seed = 1}, device);
    std::vector<data::TranslationBatch> batches;
    std::int64_t target_tokens = 0, padded_tokens = 0;
    for (std::int64_t i = 0; i < batch_count; ++i) {
      batches.push_back(batcher.next());
      target_tokens += batches.back().target_tokens;
      padded_tokens += batches.back().padded_tokens;
    }
    if (!batches_path.empty()) {
      bench::write_batches(batches, batches_path,
                           {{"vocabulary", std::to_string(sizes.vocabulary_size)},
                            {"embedding", std::to_string(sizes.embedding_size)},
                            {"hidden", std::to_string(sizes.hidden_size)}});
      std::cerr << "bench_gru_nmt: wrote " << batches.size() << " batches to " << batches_path
                << "\n";
      return 0;
    }

    // Measured as bench_gru_nmt_torch.py measures it: from after the data to the peak.
    const std::int64_t rss_before = resident_bytes();
    gru_nmt::RnnSearch model(config, generator);
    if (!device.is_cpu()) model.to(device);
    if (!weights_path.empty()) nn::save(model, weights_path);
    optim::Adam adam(model.parameters(), {.lr = settings.training.learning_rate});
    std::vector<double> times, losses, gradient_norms;
    for (int step = 0; step < warmup + steps; ++step) {
      const auto& batch = batches[static_cast<std::size_t>(step % batch_count)];
      const auto start = std::chrono::steady_clock::now();
      const auto result = gru_nmt::train_step(model, adam, batch);  // ends with loss.item()
      if (device.is_cuda()) cuda::synchronize(device.index);
      const double elapsed = seconds_since(start);
      if (step >= warmup) times.push_back(elapsed);
      losses.push_back(result.loss);
      gradient_norms.push_back(result.gradient_norm);
    }
    const double seconds = median(times);
    report["mode"] = "train";
    report["batches"] = batch_count;
    report["mean_target_tokens"] =
        static_cast<double>(target_tokens) / static_cast<double>(batch_count);
    report["mean_padded_tokens"] =
        static_cast<double>(padded_tokens) / static_cast<double>(batch_count);
    report["first_loss"] = losses.front();
    report["first_token_loss"] = losses.front() *
                                 static_cast<double>(batches.front().pairs.size()) /
                                 static_cast<double>(batches.front().target_tokens);
    report["losses"] = losses;
    report["gradient_norms"] = gradient_norms;  // before clipping
    report["step_seconds"] = times;
    report["median_seconds"] = seconds;
    report["steps_per_second"] = 1.0 / seconds;
    report["peak_tensor_bytes"] = memory_stats(device).peak_allocated_bytes;
    report["peak_rss_growth_bytes"] = peak_resident_bytes() - rss_before;
    std::cout << report.dump() << "\n";
  } catch (const Error& error) {
    std::cerr << "bench_gru_nmt: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
