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

#include "text/parallel_dataset.h"
#include "text/translation_batches.h"
#include "nmt/sentence_batches.h"
#include "process_memory.h"
#include "transformer_nmt/model.h"
#include "transformer_nmt/settings.h"
#include "transformer_nmt/training.h"
#include "transformer_nmt/translation.h"
#include "translation_bench.h"

using namespace normgrad;

int main(int argc, char** argv) {
  CLI::App app{"Times training steps or decoding of transformer_nmt's Transformer on a corpus"};
  bench::TranslationBenchFlags flags;
  flags.norm = "layernorm";
  flags.add_to(app, {"cpu", "small", "base"},
               "cpu: d256 FFN1024 3+3 layers V8000; small: d128 FFN512 2+2 V4000; base: d512 "
               "FFN2048 6+6 V32000",
               "none, layernorm, rmsnorm, prmsnorm:0.0625, l2norm",
               "bench_transformer_nmt_torch.py", "translation (cached and uncached)");
  std::string placement = "post";
  std::int64_t batch_tokens = 0, beam = 4;
  double dropout = -1;
  app.add_option("--placement", placement, "post (the paper's) or pre")
      ->check(CLI::IsMember({"post", "pre"}));
  app.add_option("--batch-tokens", batch_tokens, "override the preset's tokens per batch")
      ->check(CLI::PositiveNumber);
  app.add_option("--dropout", dropout, "override the preset's dropout (0 for --write-weights)");
  app.add_option("--beam", beam, "beam width with --decode")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  try {
    if (flags.threads > 0) set_num_threads(flags.threads);
    const Device device = flags.device == "cuda" ? Device::cuda() : Device::cpu();
    // The presets of transformer_nmt train (examples/transformer_nmt/settings.h).
    const transformer_nmt::Settings settings = transformer_nmt::preset(flags.preset);
    transformer_nmt::ModelConfig config = settings.model;
    config.norm = flags.norm;
    config.pre_norm = placement == "pre";
    config.precision = flags.precision;
    if (flags.vocabulary > 0) config.vocabulary_size = flags.vocabulary;
    if (dropout >= 0) config.dropout = dropout;
    if (batch_tokens == 0) batch_tokens = settings.training.batch_tokens;
    transformer_nmt::check(config);
    const std::string tokenizer_path = flags.tokenizer.empty()
                                           ? bench::default_tokenizer_path(config.vocabulary_size)
                                           : flags.tokenizer;
    const auto tokenizer = bench::tokenizer_at(tokenizer_path, flags.corpus, config.vocabulary_size,
                                               "bench_transformer_nmt");

    nlohmann::ordered_json report{{"framework", "normgrad"},
                                  {"model", "transformer_nmt"},
                                  {"preset", flags.preset},
                                  {"norm", flags.norm},
                                  {"placement", placement},
                                  {"device", flags.device},
                                  {"precision", flags.precision},
                                  {"threads", get_num_threads()},
                                  {"model_size", config.model_size},
                                  {"feed_forward", config.feed_forward_size},
                                  {"heads", config.heads},
                                  {"layers", config.encoder_layers},
                                  {"vocabulary", config.vocabulary_size},
                                  {"dropout", config.dropout}};
    Generator generator(1);

    if (flags.decode) {
      const auto [sources, source_tokens] =
          bench::dev_sources(tokenizer, flags.corpus, flags.sentences);
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
      const auto options = transformer_nmt::search_options(beam);
      for (const bool cached : {true, false}) {
        const nmt::BatchTranslator translator = [&](const nmt::SourceBatch& source) {
          return transformer_nmt::translate_batch(model, source, options, cached);
        };
        report[cached ? "cached" : "uncached"] = bench::time_decoding(
            tokenizer, sources, flags.warmup, flags.steps, [&](const auto& all) {
              return nmt::translate_n_best(translator, tokenizer, all, flags.decode_batch, device);
            });
      }
      std::cout << report.dump() << "\n";
      return 0;
    }

    const auto train = text::ParallelDataset::load(
        flags.corpus + "/train.en", flags.corpus + "/train.de", tokenizer,
        {.max_length = settings.training.max_length, .cache_path = tokenizer_path + ".train.ids"});
    text::TranslationBatches batcher(train, {.max_tokens = batch_tokens, .seed = 1}, device);
    const bench::FirstBatches first = bench::first_batches(batcher, flags.batch_count);
    if (!flags.batches_path.empty()) {
      bench::write_batches(first.batches, flags.batches_path,
                           {{"vocabulary", std::to_string(config.vocabulary_size)},
                            {"batch_tokens", std::to_string(batch_tokens)}});
      std::cerr << "bench_transformer_nmt: wrote " << first.batches.size() << " batches to "
                << flags.batches_path << "\n";
      return 0;
    }

    // Measured as bench_transformer_nmt_torch.py measures it: from after the data to the peak.
    const std::int64_t rss_before = bench::resident_bytes();
    transformer_nmt::TransformerNmt model(config, generator);
    if (!device.is_cpu()) model.to(device);
    if (!flags.weights_path.empty()) io::save(model, flags.weights_path);
    optim::Adam adam(model.parameters(), {.lr = settings.training.learning_rate,
                                          .beta2 = settings.training.adam_beta2,
                                          .eps = 1e-9});
    // A fixed rate: the schedule's value changes nothing in a step's cost.
    const transformer_nmt::StepSettings step_settings{
        .learning_rate = settings.training.learning_rate,
        .label_smoothing = settings.training.label_smoothing};
    const bench::TimedSteps timed =
        bench::time_steps(first, flags.warmup, flags.steps, device, [&](const auto& batch) {
          return transformer_nmt::train_step(model, adam, batch, step_settings);
        });
    std::int64_t parameters = 0;
    for (const auto& parameter : model.parameters()) parameters += parameter.numel();
    bench::add_training_report(report, first, timed);
    report["parameters"] = parameters;
    report["batch_tokens"] = batch_tokens;
    report["peak_tensor_bytes"] = memory_stats(device).peak_allocated_bytes;
    report["peak_rss_growth_bytes"] = bench::peak_resident_bytes() - rss_before;
    std::cout << report.dump() << "\n";
  } catch (const Error& error) {
    std::cerr << "bench_transformer_nmt: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
