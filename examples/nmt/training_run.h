#pragma once
// The training run of a translation model folder, whatever the model: the data and the
// tokenizer, then the loop. A new run trains its tokenizer on the training text (or takes a
// given one) and writes the folder; every step logs a row of train.csv; dev loss and dev BLEU
// are measured at their intervals, the best weights kept, and training stops early after
// `patience` BLEU evaluations without a new best; training states are written at their
// interval and at the end. A resumed run continues from the newest training state with the
// same batches, the same random numbers and so the same losses as an uninterrupted run.
//
// The model comes in as a Trainee (what a training state keeps, a step, the dev measurements),
// so gru_nmt and transformer_nmt run the same loop.

#include <normgrad/normgrad.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "common/distributed_run.h"
#include "common/step_profile.h"
#include "common/training_loop.h"
#include "distributed/data_parallel.h"
#include "nmt/evaluation.h"
#include "nmt/model_folder.h"
#include "nmt/training_settings.h"
#include "text/parallel_dataset.h"
#include "text/subword_tokenizer.h"
#include "text/translation_batches.h"

namespace nmt {

// A new run's corpus paths in `t` made absolute (so a resumed run finds them from any folder),
// and checked: an Error naming the first that cannot be read, or the folder if it already holds
// a model.
void check_new_run(const ModelFolder& folder, TrainingSettings& t);

struct RunData {
  normgrad::text::SubwordTokenizer tokenizer;
  normgrad::text::ParallelDataset train, dev;
  std::vector<std::string> dev_references;  // the dev target file's lines
};

// The tokenizer and the data of a run on t's corpus. `tokenizer`: the resumed folder's
// (already checked), a given sentencepiece model, or nothing (one is trained on the training
// text, after checking that both sides have as many lines). Training pairs longer than
// t.max_length are left out.
RunData load_run_data(std::optional<normgrad::text::SubwordTokenizer> tokenizer,
                      const TrainingSettings& t, std::int64_t vocabulary_size,
                      const std::string& program, std::ostream* messages);

// What a training step did.
struct StepReport {
  double loss = 0;        // what the model minimises
  double token_loss = 0;  // per target token: comparable across batches and models
  double learning_rate = 0;
  double gradient_norm = 0;  // before clipping
  std::int64_t target_tokens = 0;
};

// The end of a training step on `loss`: backward, the gradients' global norm clipped to
// `clip_norm` (<= 0: measured, not clipped), the optimizer's step at its learning rate. The
// report's token_loss is the loss, as for a loss that is already per target token.
StepReport backward_and_step(const normgrad::Tensor& loss, normgrad::nn::Module& model,
                             normgrad::optim::Optimizer& optimizer, double clip_norm,
                             std::int64_t target_tokens);

// What the loop trains: the model, its optimizer and the run's generator, which its training
// states keep, and the program's step and dev measurements. In data-parallel training a
// training state holds every rank's generator (each draws its own dropout masks) and the number
// of ranks, rank 0 alone writes it, and it resumes only a job of as many ranks.
struct Trainee {
  normgrad::nn::Module& model;
  normgrad::optim::Optimizer& optimizer;
  normgrad::Generator& generator;
  // One optimisation step on a batch; `step` counts the steps taken before it.
  std::function<StepReport(const normgrad::text::TranslationBatch& batch, std::int64_t step)>
      train_step{};
  std::function<double()> dev_loss{};  // per target token
  std::function<BleuEvaluation()> dev_bleu{};
};

// Data-parallel training's replica of `model` (null in a job of one): rank 0's weights on every
// rank, gradients averaged during backward. Ranks past 0 reseed `generator` (after it drew the
// weights) so that each draws dropout masks of its own.
std::unique_ptr<normgrad::distributed::DataParallel> data_parallel(
    normgrad::nn::Module& model, normgrad::Generator& generator,
    const examples::DistributedRun& job);

// What `train` is asked to do, for an example's Settings.
template <class Settings> struct TrainOptions {
  std::string folder{};
  Settings settings{};  // for a new run; a resumed run reads the folder's (budgets below apply)
  bool resume = false;
  // A new run trains its tokenizer on the training text unless given one here (a
  // sentencepiece model file, e.g. another folder's tokenizer.model), which it copies into its
  // folder: runs that share one share their vocabulary and their token cache.
  std::string tokenizer{};
  // On resume, these replace the folder's budgets when set, so a run can be extended.
  std::int64_t resume_max_steps = 0;  // > 0
  double resume_max_seconds = -1;     // >= 0
  normgrad::Device device = normgrad::Device::cpu();
  bool progress_bar = false;         // a redrawn line (a terminal) instead of a line per dev loss
  std::ostream* messages = nullptr;  // progress and notes; nothing when null
  // This process's rank in data-parallel training (--distributed): it trains on its share of
  // the batches, and rank 0 alone writes the folder and prints.
  examples::DistributedRun job{};
  examples::ProfileFlags profile{};  // steps to profile (--profile)
};

template <class Settings> struct RunStart {
  Settings settings;
  RunData data;
};

// Where the other ranks wait while rank 0 prepares a run: as long as that takes (a tokenizer
// trained on a large corpus can take longer than the collectives' timeout).
void wait_for_rank_zero();

// A run's settings and data (load_run_data), checked before anything is written; then a new
// run's folder, with its tokenizer and config.json. Resuming: the folder's settings (an Error
// when it holds none) with the budgets of `options` when given, and its tokenizer, checked. A new
// run: options.settings, checked (`check` of the settings' namespace), with the corpus paths made
// absolute and checked (check_new_run), and the given tokenizer file when there is one. In
// data-parallel training rank 0 does that alone (training the tokenizer, building the token
// caches) while the others wait; then they read what it wrote, as a resumed run does.
template <class Program>
RunStart<typename Program::Settings> start_run(
    const ProgramFolder<Program>& folder, const TrainOptions<typename Program::Settings>& options) {
  const auto start = [&](bool resume) {
    auto settings = options.settings;
    std::optional<normgrad::text::SubwordTokenizer> tokenizer;
    if (resume) {
      NG_CHECK(folder.has_config(), folder.program() + " train", "--resume: ", folder.path(),
               " holds no model to resume");
      std::string fingerprint;
      settings = folder.read_config(&fingerprint);
      tokenizer = folder.load_tokenizer(fingerprint, settings.model.vocabulary_size);
      auto& t = settings.training;
      if (options.resume_max_steps > 0) t.max_steps = options.resume_max_steps;
      if (options.resume_max_seconds >= 0) t.max_seconds = options.resume_max_seconds;
    } else {
      check(settings);
      check_new_run(folder, settings.training);
      if (!options.tokenizer.empty())
        tokenizer = normgrad::text::SubwordTokenizer::load(options.tokenizer);
    }
    RunData data =
        load_run_data(std::move(tokenizer), settings.training, settings.model.vocabulary_size,
                      folder.program(), options.messages);
    if (!resume) {
      std::filesystem::create_directories(folder.path());
      data.tokenizer.save(folder.file("tokenizer.model"));
      folder.write_config(settings, data.tokenizer.fingerprint());
    }
    return RunStart<typename Program::Settings>{std::move(settings), std::move(data)};
  };
  if (!options.job.several()) return start(options.resume);
  std::optional<RunStart<typename Program::Settings>> run;
  if (options.job.writes()) run = start(options.resume);
  wait_for_rank_zero();
  // The other ranks take the folder's settings and tokenizer, with the budgets given.
  if (!options.job.writes()) run = start(/*resume=*/true);
  return std::move(*run);
}

// Where the loop started and stopped and why (examples::LoopEnd), and what it measured.
struct TrainSummary : examples::LoopEnd {
  std::vector<double> losses{};  // the loss of each step this invocation took
  double best_bleu = -1;         // -1: no dev BLEU yet
};

struct LoopOptions {
  bool resume = false;
  bool progress_bar = false;         // a redrawn line (a terminal) instead of a line per dev loss
  std::ostream* messages = nullptr;  // progress and notes; nothing when null
  examples::DistributedRun job{};    // rank 0 alone writes the folder and prints
  examples::ProfileFlags profile{};  // steps to profile
};

// The loop. In data-parallel training every rank runs it on its share of the batches (the
// train_step averages gradients); dev measurements must be the whole job's on every rank (so
// that early stopping stops every rank at once), and the time budget stops them together.
// `t` gives the budgets, the dev intervals, patience and the training states' interval and
// count.
TrainSummary run_training_loop(const ModelFolder& folder,
                               normgrad::text::TranslationBatches& batches,
                               const normgrad::text::SubwordTokenizer& tokenizer,
                               const TrainingSettings& t, const Trainee& model,
                               const LoopOptions& options);

}  // namespace nmt
