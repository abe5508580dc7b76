// Times examples/transformer_nmt's Transformer on real batches of a corpus built by
// scripts/build_corpus: whole training steps (transformer_nmt::train_step: zero_grad, forward,
// cross-entropy with label smoothing 0.1 over the real target tokens, backward, the global
// gradient norm, Adam with beta2 0.98), or, with --decode, translating dev sentences with beam
// 4 through the key/value cache and by recomputation. Prints one JSON line.
//
//   bench_transformer_nmt --corpus out/corpus/debian-en-de --preset cpu --norm rmsnorm
//   {"framework":"normgrad","model":"transformer_nmt","preset":"cpu","norm":"rmsnorm",...,
//    "step_seconds":[...],"median_seconds":...,"peak_tensor_bytes":...}
//   bench_transformer_nmt --corpus ... --write-batches build/transformer_batches_cpu.safetensors
//   bench_transformer_nmt --corpus ... --decode --sentences 200
//
// The batches are the first --batches batches of TranslationBatches over the training text by
// token count (the preset's batch_tokens and max_length, or --batch-tokens; seed 1), the same
// on every run; step s (warm-up steps counted) trains on batch s mod --batches.
// --write-batches saves them, so that bench_transformer_nmt_torch.py trains on exactly the same
// token ids in the same order. With --write-weights the model's initial weights are saved too;
// the twin started from them (--weights) with --dropout 0 on both sides prints the same losses
// and gradient norms, to float32 rounding: the check that it is the same model.
//
// The tokenizer is a joint BPE model of the preset's vocabulary trained on the training text
// (as transformer_nmt train trains it), kept beside this program and trained only when absent.
//
// Decoding uses untrained weights (the model's seeded initialisation): the speed of a search
// does not depend on what the weights have learnt, but its length does, so hypotheses are
// limited as transformer_nmt translate limits them, to 2 x source length + 10 tokens, and the
// report gives the mean output length beside the rate.

#include <normgrad/normgrad.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "data/parallel_dataset.h"
#include "data/translation_batches.h"
#include "nmt/sentence_batches.h"
#include "process_memory.h"
#include "transformer_nmt/model.h"
#include "transformer_nmt/settings.h"
#include "transformer_nmt/training.h"
#include "transformer_nmt/translation.h"
#include "translation_bench.h"

namespace {

using namespace normgrad;
using normgrad::bench::median;
using normgrad::bench::seconds_since;

// Translates every source `passes` times (after `warmup` untimed passes) through the cache or
// by recomputation: the pass times, and the mean output length in subwords.
nlohmann::ordered_json time_decoding(transformer_nmt::TransformerNmt& model,
                                     const data::SubwordTokenizer& tokenizer,
                                     const std::vector<std::vector<std::int32_t>>& sources,
                                     std::int64_t beam, bool cached, std::int64_t batch_sentences,
                                     int warmup, int passes, Device device) {
  const auto options = transformer_nmt::search_options(beam);
  const nmt::BatchTranslator translator = [&](const nmt::SourceBatch& source) {
    return transformer_nmt::translate_batch(model, source, options, cached);
  };
  std::vector<double> times;
  std::int64_t output_tokens = 0;
  for (int pass = 0; pass < warmup + passes; ++pass) {
    const auto start = std::chrono::steady_clock::now();
    const auto translations =
        nmt::translate_n_best(translator, tokenizer, sources, batch_sentences, device);
    if (pass >= warmup) times.push_back(seconds_since(start));
    output_tokens = 0;
    for (const auto& n_best : translations)
      output_tokens += static_cast<std::int64_t>(tokenizer.encode(n_best.front().text).size());
  }
  const double seconds = median(times);
  return {{"pass_seconds", times},
          {"median_seconds", seconds},
          {"sentences_per_second", static_cast<double>(sources.size()) / seconds},
          {"mean_output_subwords",
           static_cast<double>(output_tokens) / static_cast<double>(sources.size())}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Times training steps or decoding of transformer_nmt's Transformer on a corpus"};
  std::string corpus = "out/corpus/debian-en-de", preset_name = "cpu", norm = "layernorm";
  std::string placement = "post", device_name = "cpu", tokenizer_path, batches_path, weights_path;
  int steps = 20, warmup = 2, threads = 0;
  std::int64_t batch_tokens = 0, batch_count = 20, vocabulary = 0, sentences = 200,
               decode_batch = 32, beam = 4;
  double dropout = -1;
  bool decode = false;
  app.add_option("--corpus", corpus, "folder with train.en, train.de, dev.en");
  app.add_option("--preset", preset_name,
                 "cpu: d256 FFN1024 3+3 layers V8000; small: d128 FFN512 2+2 V4000; base: d512 "
                 "FFN2048 6+6 V32000")
      ->check(CLI::IsMember({"cpu", "small", "base"}));
  app.add_option("--norm", norm, "none, layernorm, rmsnorm, prmsnorm:0.0625, l2norm");
  app.add_option("--placement", placement, "post (the paper's) or pre")
      ->check(CLI::IsMember({"post", "pre"}));
  app.add_option("--vocabulary", vocabulary, "override the preset's vocabulary size");
  app.add_option("--batch-tokens", batch_tokens, "override the preset's tokens per batch")
      ->check(CLI::PositiveNumber);
  app.add_option("--dropout", dropout, "override the preset's dropout (0 for --write-weights)");
  app.add_option("--steps", steps, "timed steps (with --decode: timed passes)")
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "untimed steps (passes) first")->check(CLI::NonNegativeNumber);
  app.add_option("--threads", threads, "threads (0: OMP_NUM_THREADS or all cores)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--device", device_name, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--tokenizer", tokenizer_path,
                 "the tokenizer's file, trained and written when absent (default: beside this "
                 "program, named after the vocabulary size)");
  app.add_option("--batches", batch_count, "distinct batches, trained on in turn")
      ->check(CLI::PositiveNumber);
  app.add_option("--write-batches", batches_path, "save the batches (safetensors) and stop");
  app.add_option("--write-weights", weights_path,
                 "save the model's initial weights (safetensors), for "
                 "bench_transformer_nmt_torch.py --weights");
  app.add_flag("--decode", decode, "time translation (cached and uncached) instead of training");
  app.add_option("--sentences", sentences, "dev sentences to translate with --decode")
      ->check(CLI::PositiveNumber);
  app.add_option("--decode-batch", decode_batch, "sentences per decoding batch")
      ->check(CLI::PositiveNumber);
  app.add_option("--beam", beam, "beam width with --decode")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  try {
    if (threads > 0) set_num_threads(threads);
    const Device device = device_name == "cuda" ? Device::cuda() : Device::cpu();
    // The presets of transformer_nmt train (examples/transformer_nmt/settings.h).
    const transformer_nmt::Settings settings = transformer_nmt::preset(preset_name);
    transformer_nmt::ModelConfig config = settings.model;
    config.norm = norm;
    config.pre_norm = placement == "pre";
    if (vocabulary > 0) config.vocabulary_size = vocabulary;
    if (dropout >= 0) config.dropout = dropout;
    if (batch_tokens == 0) batch_tokens = settings.training.batch_tokens;
    transformer_nmt::check(config);
    if (tokenizer_path.empty())
      tokenizer_path = bench::default_tokenizer_path(config.vocabulary_size);
    const auto tokenizer = bench::tokenizer_at(tokenizer_path, corpus, config.vocabulary_size,
                                               "bench_transformer_nmt");

    nlohmann::ordered_json report{{"framework", "normgrad"},
                                  {"model", "transformer_nmt"},
                                  {"preset", preset_name},
                                  {"norm", norm},
                                  {"placement", placement},
                                  {"device", device_name},
                                  {"threads", get_num_threads()},
                                  {"model_size", config.model_size},
                                  {"feed_forward", config.feed_forward_size},
                                  {"heads", config.heads},
                                  {"layers", config.encoder_layers},
                                  {"vocabulary", config.vocabulary_size},
                                  {"dropout", config.dropout}};
    Generator generator(1);

    if (decode) {
      const auto [sources, source_tokens] = bench::dev_sources(tokenizer, corpus, sentences);
      transformer_nmt::TransformerNmt model(config, generator);
      if (!device.is_cpu()) model.to(device);
      model.eval();
      NoGradGuard no_grad;
      report["mode"] = "decode";
      report["weights"] = "untrained (seed 1)";
      report["sentences"] = sources.size();
      report["source_tokens"] = source_tokens;
      report["beam"] = beam;
      report["max_length"] = "2 x source + 10";
      report["cached"] =
          time_decoding(model, tokenizer, sources, beam, true, decode_batch, warmup, steps, device);
      report["uncached"] = time_decoding(model, tokenizer, sources, beam, false, decode_batch,
                                         warmup, steps, device);
      std::cout << report.dump() << "\n";
      return 0;
    }

    const auto train = data::ParallelDataset::load(
        corpus + "/train.en", corpus + "/train.de", tokenizer,
        {.max_length = settings.training.max_length, .cache_path = tokenizer_path + ".train.ids"});
    data::TranslationBatches batcher(train, {.max_tokens = batch_tokens, .seed = 1}, device);
    std::vector<data::TranslationBatch> batches;
    std::int64_t target_tokens = 0, padded_tokens = 0;
    for (std::int64_t i = 0; i < batch_count; ++i) {
      batches.push_back(batcher.next());
      target_tokens += batches.back().target_tokens;
      padded_tokens += batches.back().padded_tokens;
    }
    if (!batches_path.empty()) {
      bench::write_batches(batches, batches_path,
                           {{"vocabulary", std::to_string(config.vocabulary_size)},
                            {"batch_tokens", std::to_string(batch_tokens)}});
      std::cerr << "bench_transformer_nmt: wrote " << batches.size() << " batches to "
                << batches_path << "\n";
      return 0;
    }

    // Measured as bench_transformer_nmt_torch.py measures it: from after the data to the peak.
    const std::int64_t rss_before = bench::resident_bytes();
    transformer_nmt::TransformerNmt model(config, generator);
    if (!device.is_cpu()) model.to(device);
    if (!weights_path.empty()) nn::save(model, weights_path);
    optim::Adam adam(model.parameters(), {.lr = settings.training.learning_rate,
                                          .beta2 = settings.training.adam_beta2,
                                          .eps = 1e-9});
    // A fixed rate: the schedule's value changes nothing in a step's cost.
    const transformer_nmt::StepSettings step_settings{
        .learning_rate = settings.training.learning_rate,
        .label_smoothing = settings.training.label_smoothing};
    std::vector<double> times, losses, gradient_norms;
    for (int step = 0; step < warmup + steps; ++step) {
      const auto& batch = batches[static_cast<std::size_t>(step % batch_count)];
      const auto start = std::chrono::steady_clock::now();
      const auto result = transformer_nmt::train_step(model, adam, batch, step_settings);
      if (device.is_cuda()) cuda::synchronize(device.index);
      const double elapsed = seconds_since(start);
      if (step >= warmup) times.push_back(elapsed);
      losses.push_back(result.loss);
      gradient_norms.push_back(result.gradient_norm);
    }
    const double seconds = median(times);
    std::int64_t parameters = 0;
    for (const auto& parameter : model.parameters()) parameters += parameter.numel();
    report["mode"] = "train";
    report["parameters"] = parameters;
    report["batch_tokens"] = batch_tokens;
    report["batches"] = batch_count;
    report["mean_target_tokens"] =
        static_cast<double>(target_tokens) / static_cast<double>(batch_count);
    report["mean_padded_tokens"] =
        static_cast<double>(padded_tokens) / static_cast<double>(batch_count);
    report["losses"] = losses;
    report["gradient_norms"] = gradient_norms;
    report["step_seconds"] = times;
    report["median_seconds"] = seconds;
    report["steps_per_second"] = 1.0 / seconds;
    report["peak_tensor_bytes"] = memory_stats(device).peak_allocated_bytes;
    report["peak_rss_growth_bytes"] = bench::peak_resident_bytes() - rss_before;
    std::cout << report.dump() << "\n";
  } catch (const Error& error) {
    std::cerr << "bench_transformer_nmt: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
