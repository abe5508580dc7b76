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

#include "gru_nmt/model.h"
#include "gru_nmt/settings.h"
#include "gru_nmt/training.h"
#include "gru_nmt/translation.h"
#include "nmt/sentence_batches.h"
#include "process_memory.h"
#include "text/parallel_dataset.h"
#include "text/translation_batches.h"
#include "translation_bench.h"

using namespace normgrad;

int main(int argc, char** argv) {
  CLI::App app{"Times training steps or decoding of gru_nmt's RnnSearch on a real corpus"};
  bench::TranslationBenchFlags flags;
  flags.sentences = 400;
  flags.add_to(app, {"cpu", "small", "paper"},
               "cpu: E128 H256 V8000; small: E64 H128 V4000; paper: E512 H1024 V32000",
               "none, layernorm, l2norm, rmsnorm, prmsnorm:0.0625, ...", "bench_gru_nmt_torch.py",
               "translation (beam 5 and greedy)");
  std::int64_t batch_sentences = 80;
  app.add_option("--batch", batch_sentences, "sentences per batch")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  try {
    if (flags.threads > 0) set_num_threads(flags.threads);
    const Device device = flags.device == "cuda" ? Device::cuda() : Device::cpu();
    // The presets of gru_nmt train (examples/gru_nmt/settings.h).
    const gru_nmt::Settings settings = gru_nmt::preset(flags.preset);
    gru_nmt::ModelConfig sizes = settings.model;
    if (flags.vocabulary > 0) sizes.vocabulary_size = flags.vocabulary;
    const std::string tokenizer_path = flags.tokenizer.empty()
                                           ? bench::default_tokenizer_path(sizes.vocabulary_size)
                                           : flags.tokenizer;
    const auto tokenizer =
        bench::tokenizer_at(tokenizer_path, flags.corpus, sizes.vocabulary_size, "bench_gru_nmt");

    nlohmann::ordered_json report{
        {"framework", "normgrad"},      {"model", "gru_nmt"},
        {"preset", flags.preset},       {"norm", flags.norm},
        {"device", flags.device},       {"precision", flags.precision},
        {"threads", get_num_threads()}, {"embedding", sizes.embedding_size},
        {"hidden", sizes.hidden_size},  {"vocabulary", sizes.vocabulary_size}};
    Generator generator(1);
    const gru_nmt::ModelConfig config{.vocabulary_size = sizes.vocabulary_size,
                                      .embedding_size = sizes.embedding_size,
                                      .hidden_size = sizes.hidden_size,
                                      .norm = flags.norm,
                                      .precision = flags.precision};

    if (flags.decode) {
      const auto [sources, source_tokens] =
          bench::dev_sources(tokenizer, flags.corpus, flags.sentences);
      gru_nmt::RnnSearch model(config, generator);
      if (!device.is_cpu()) model.to(device);
      report["mode"] = "decode";
      report["weights"] = "untrained (seed 1)";
      report["sentences"] = sources.size();
      report["source_tokens"] = source_tokens;
      report["max_length"] = "2 x source + 10";
      for (const std::int64_t beam : {5, 1}) {
        const decoding::BeamSearchOptions options = gru_nmt::search_options(beam);
        const nmt::BatchTranslator translator = [&](const nmt::SourceBatch& source) {
          return gru_nmt::translate_batch(model, source.ids, source.lengths, source.padding,
                                          options);
        };
        report[beam == 1 ? "greedy" : "beam5"] = bench::time_decoding(
            tokenizer, sources, flags.warmup, flags.steps, [&](const auto& all) {
              return nmt::translate_n_best(translator, tokenizer, all, flags.decode_batch, device);
            });
      }
      std::cout << report.dump() << "\n";
      return 0;
    }

    const auto train = text::ParallelDataset::load(
        flags.corpus + "/train.en", flags.corpus + "/train.de", tokenizer,
        {.max_length = 80, .cache_path = tokenizer_path + ".train.ids"});
    text::TranslationBatches batcher(train, {.max_sentences = batch_sentences, .seed = 1}, device);
    const bench::FirstBatches first = bench::first_batches(batcher, flags.batch_count);
    if (!flags.batches_path.empty()) {
      bench::write_batches(first.batches, flags.batches_path,
                           {{"vocabulary", std::to_string(sizes.vocabulary_size)},
                            {"embedding", std::to_string(sizes.embedding_size)},
                            {"hidden", std::to_string(sizes.hidden_size)}});
      std::cerr << "bench_gru_nmt: wrote " << first.batches.size() << " batches to "
                << flags.batches_path << "\n";
      return 0;
    }

    // Measured as bench_gru_nmt_torch.py measures it: from after the data to the peak.
    const std::int64_t rss_before = bench::resident_bytes();
    gru_nmt::RnnSearch model(config, generator);
    if (!device.is_cpu()) model.to(device);
    if (!flags.weights_path.empty()) io::save(model, flags.weights_path);
    optim::Adam adam(model.parameters(), {.lr = settings.training.learning_rate});
    const bench::TimedSteps timed =
        bench::time_steps(first, flags.warmup, flags.steps, device, [&](const auto& batch) {
          return gru_nmt::train_step(model, adam, batch);  // ends with loss.item()
        });
    bench::add_training_report(report, first, timed);  // gradient norms before clipping
    const auto& batch = first.batches.front();
    report["first_loss"] = timed.losses.front();
    report["first_token_loss"] = timed.losses.front() * static_cast<double>(batch.pairs.size()) /
                                 static_cast<double>(batch.target_tokens);
    report["peak_tensor_bytes"] = memory_stats(device).peak_allocated_bytes;
    report["peak_rss_growth_bytes"] = bench::peak_resident_bytes() - rss_before;
    std::cout << report.dump() << "\n";
  } catch (const Error& error) {
    std::cerr << "bench_gru_nmt: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
