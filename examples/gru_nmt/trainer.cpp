#include "trainer.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "data/parallel_dataset.h"
#include "data/text_file.h"
#include "data/translation_batches.h"
#include "evaluation.h"
#include "nn/atomic_file.h"
#include "progress.h"
#include "training.h"

namespace gru_nmt {

namespace ng = normgrad;
namespace fs = std::filesystem;

namespace {

const char* const csv_header =
    "step,wall_seconds,train_loss,train_token_loss,dev_token_loss,dev_bleu,tokens_per_second,"
    "step_seconds";

// The training loop's own state, saved with each training state as metadata.
struct LoopState {
  ng::data::BatchPosition position;
  double best_bleu = -1;
  std::int64_t evaluations_without_best = 0;
  double wall_seconds = 0;  // of all invocations so far

  ng::nn::Metadata to_metadata(const std::string& tokenizer) const {
    return {{"position", std::to_string(position.epoch) + " " + std::to_string(position.batch)},
            {"best_bleu", std::to_string(best_bleu)},
            {"evaluations_without_best", std::to_string(evaluations_without_best)},
            {"wall_seconds", std::to_string(wall_seconds)},
            {ng::data::tokenizer_metadata_key, tokenizer}};
  }
  static LoopState from_metadata(const ng::nn::Metadata& metadata, const std::string& path) {
    LoopState state;
    try {
      std::istringstream position(metadata.at("position"));
      position >> state.position.epoch >> state.position.batch;
      state.best_bleu = std::stod(metadata.at("best_bleu"));
      state.evaluations_without_best = std::stoll(metadata.at("evaluations_without_best"));
      state.wall_seconds = std::stod(metadata.at("wall_seconds"));
    } catch (const std::exception&) {
      throw ng::Error("gru_nmt: " + path +
                      " is not a gru_nmt training state (its loop state is missing or broken)");
    }
    return state;
  }
};

// Keeps the rows of steps up to `step` (a resumed run writes the later ones again).
void truncate_log(const std::string& path, std::int64_t step) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return;
  const auto lines = ng::data::read_text_lines(path);
  std::string kept = std::string(csv_header) + "\n";
  for (std::size_t i = 1; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    if (std::stoll(lines[i].substr(0, lines[i].find(','))) <= step) kept += lines[i] + "\n";
  }
  ng::nn::write_atomically(
      path, "gru_nmt", [&](const ng::nn::FileWriter& out) { out.write(kept.data(), kept.size()); });
}

std::string optional_number(double value, const char* format) {
  if (value < 0) return "";
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

}  // namespace

TrainSummary train(const TrainOptions& options) {
  const ModelFolder folder(options.folder);
  auto say = [&](const std::string& text) {
    if (options.messages != nullptr) *options.messages << text << std::flush;
  };

  // The configuration and the tokenizer: the folder's, or new ones.
  Settings settings;
  std::optional<ng::data::SubwordTokenizer> tokenizer;
  if (options.resume) {
    NG_CHECK(folder.has_config(), "gru_nmt train", "--resume: ", folder.path(),
             " holds no model to resume");
    std::string fingerprint;
    settings = folder.read_config(&fingerprint);
    tokenizer = ng::data::SubwordTokenizer::load(folder.file("tokenizer.model"));
    tokenizer->check_fingerprint(fingerprint, folder.file("config.json"));
    if (options.resume_max_steps > 0) settings.training.max_steps = options.resume_max_steps;
    if (options.resume_max_seconds >= 0) settings.training.max_seconds = options.resume_max_seconds;
  } else {
    settings = options.settings;
    check(settings);
    // Absolute paths, so that a resumed run finds the data from any folder.
    for (auto* path : {&settings.training.train_source, &settings.training.train_target,
                       &settings.training.dev_source, &settings.training.dev_target}) {
      std::error_code ec;
      const auto absolute = fs::absolute(*path, ec);
      if (!ec) *path = absolute.lexically_normal().string();
    }
    NG_CHECK(!folder.has_config(), "gru_nmt train", folder.path(),
             " already holds a model: pass --resume to continue it, or choose another folder");
    for (const auto* path : {&settings.training.train_source, &settings.training.train_target,
                             &settings.training.dev_source, &settings.training.dev_target}) {
      std::error_code ec;
      NG_CHECK(fs::is_regular_file(*path, ec), "gru_nmt train", "cannot read '", *path, "'");
    }
  }
  const TrainingSettings& t = settings.training;
  // The data, checked before anything is written.
  const ng::data::SubwordTrainingOptions tokenizer_options{
      .vocabulary_size = static_cast<std::int32_t>(settings.model.vocabulary_size)};
  if (!tokenizer && !options.tokenizer.empty()) {
    tokenizer = ng::data::SubwordTokenizer::load(options.tokenizer);
    NG_CHECK(tokenizer->vocabulary_size() == settings.model.vocabulary_size, "gru_nmt train",
             "the tokenizer ", options.tokenizer, " has ", tokenizer->vocabulary_size(),
             " pieces, but the model's vocabulary is ", settings.model.vocabulary_size);
  }
  if (!tokenizer) {
    say("training the tokenizer on " + t.train_source + " and " + t.train_target + "\n");
    // Check line counts first: a misaligned corpus is refused before any training.
    const auto source_lines = ng::data::read_text_lines(t.train_source).size();
    const auto target_lines = ng::data::read_text_lines(t.train_target).size();
    NG_CHECK(source_lines == target_lines, "gru_nmt train", t.train_source, " has ", source_lines,
             " lines but ", t.train_target, " has ", target_lines);
    tokenizer =
        ng::data::SubwordTokenizer::train({t.train_source, t.train_target}, tokenizer_options);
  }
  const auto train_data = ng::data::ParallelDataset::load(t.train_source, t.train_target,
                                                          *tokenizer, {.max_length = t.max_length});
  const auto dev_data = ng::data::ParallelDataset::load(t.dev_source, t.dev_target, *tokenizer, {});
  const auto dev_references = ng::data::strip_line_ends(ng::data::read_text_lines(t.dev_target));
  say("training pairs: " + std::to_string(train_data.size()) + " (" +
      train_data.statistics().cache + "), dev pairs: " + std::to_string(dev_data.size()) + "\n");
  if (!options.resume) {
    fs::create_directories(folder.path());
    tokenizer->save(folder.file("tokenizer.model"));
    folder.write_config(settings, tokenizer->fingerprint());
  }

  ng::Generator generator(t.seed);
  RnnSearch model(settings.model, generator);
  if (!options.device.is_cpu()) model.to(options.device);
  ng::optim::Adam adam(model.parameters(), {.lr = t.learning_rate});
  ng::data::TranslationBatches batches(
      train_data, {.max_sentences = t.batch_sentences, .seed = t.seed}, options.device);

  TrainSummary summary;
  LoopState loop;
  std::int64_t step = 0;
  const std::string log_path = folder.file("train.csv");
  if (options.resume) {
    const auto steps = folder.checkpoint_steps();
    NG_CHECK(!steps.empty(), "gru_nmt train", "--resume: ", folder.path(),
             " holds no training state");
    const std::string path = folder.checkpoint(steps.back());
    ng::nn::Metadata metadata;
    step = ng::optim::load_training_state(path, model, adam, generator, &metadata);
    tokenizer->check_checkpoint(metadata, path);
    loop = LoopState::from_metadata(metadata, path);
    batches.seek(loop.position);
    truncate_log(log_path, step);
    say("resumed from " + path + " at step " + std::to_string(step) + "\n");
  } else {
    const std::string header = std::string(csv_header) + "\n";
    ng::nn::write_atomically(log_path, "gru_nmt", [&](const ng::nn::FileWriter& out) {
      out.write(header.data(), header.size());
    });
  }
  summary.first_step = step;
  summary.best_bleu = loop.best_bleu;
  std::FILE* log = std::fopen(log_path.c_str(), "a");
  NG_CHECK(log != nullptr, "gru_nmt train", "cannot append to ", log_path);

  auto save_state = [&] {
    loop.position = batches.position();
    ng::optim::save_training_state(folder.checkpoint(step), model, adam, generator, step,
                                   loop.to_metadata(tokenizer->fingerprint()));
    ng::nn::save(model, folder.file("model.safetensors"),
                 {{ng::data::tokenizer_metadata_key, tokenizer->fingerprint()},
                  {"step", std::to_string(step)}});
    folder.prune_checkpoints(t.keep_checkpoints);
  };

  ProgressDisplay progress(options.messages, options.progress_bar, t.max_steps);
  const auto start = std::chrono::steady_clock::now();
  const double wall_before = loop.wall_seconds;
  summary.stopped_because = "the step budget";
  while (step < t.max_steps) {
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (t.max_seconds > 0 && elapsed >= t.max_seconds) {
      summary.stopped_because = "the time budget";
      break;
    }
    const auto step_start = std::chrono::steady_clock::now();
    const auto batch = batches.next();
    const StepResult result = train_step(model, adam, batch,
                                         {.label_smoothing = t.label_smoothing,
                                          .clip_norm = t.clip_norm,
                                          .dropout_generator = &generator});
    ++step;
    summary.losses.push_back(result.loss);
    const double step_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start).count();
    loop.wall_seconds =
        wall_before +
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    double dev_loss = -1;
    double dev_bleu = -1;
    if (step % t.dev_loss_every == 0)
      dev_loss = dataset_token_loss(model, dev_data, t.batch_sentences, options.device);
    bool stop_early = false;
    if (step % t.dev_bleu_every == 0) {
      const auto evaluation = dataset_bleu(model, *tokenizer, dev_data, dev_references, t.dev_beam,
                                           t.batch_sentences, options.device);
      dev_bleu = evaluation.bleu;
      if (dev_bleu > loop.best_bleu) {
        loop.best_bleu = dev_bleu;
        loop.evaluations_without_best = 0;
        ng::nn::save(model, folder.file("best.safetensors"),
                     {{ng::data::tokenizer_metadata_key, tokenizer->fingerprint()},
                      {"step", std::to_string(step)},
                      {"dev_bleu", evaluation.text}});
      } else {
        ++loop.evaluations_without_best;
        stop_early = t.patience > 0 && loop.evaluations_without_best >= t.patience;
      }
      progress.note("step " + std::to_string(step) + ": dev " + evaluation.text + "\n");
    }
    const double tokens_per_second =
        static_cast<double>(batch.source_tokens + batch.target_tokens) / step_seconds;
    std::fprintf(log, "%lld,%.3f,%.6f,%.6f,%s,%s,%.1f,%.6f\n", static_cast<long long>(step),
                 loop.wall_seconds, result.loss, result.token_loss,
                 optional_number(dev_loss, "%.6f").c_str(),
                 optional_number(dev_bleu, "%.2f").c_str(), tokens_per_second, step_seconds);
    std::fflush(log);
    progress.update(step, result.token_loss, tokens_per_second, dev_loss, elapsed);

    if (stop_early) {
      summary.stopped_because = "early stopping";
      break;
    }
    if (step % t.checkpoint_every == 0) save_state();
  }
  if (folder.checkpoint_steps().empty() || folder.checkpoint_steps().back() != step) save_state();
  std::fclose(log);
  summary.last_step = step;
  summary.best_bleu = loop.best_bleu;
  progress.finish("stopped at step " + std::to_string(step) + " by " + summary.stopped_because +
                  "\n");
  return summary;
}

}  // namespace gru_nmt
