#include "training_run.h"

#include <chrono>
#include <filesystem>
#include <optional>
#include <sstream>

#include "common/number_text.h"
#include "common/progress.h"
#include "distributed/collectives.h"
#include "nmt/train_log.h"
#include "text/text_file.h"

namespace nmt {

namespace ng = normgrad;
namespace fs = std::filesystem;

namespace {

// A data-parallel training state's number of ranks, and each rank's generator ("seed offset").
constexpr const char* kRanksKey = "nmt.ranks";
constexpr const char* kRankGeneratorKey = "nmt.generator.rank";

// Every rank calls it: a training state gathers every rank's generator; rank 0 writes it.
void save_training_state(const std::string& path, std::int64_t step, ng::io::Metadata metadata,
                         const Trainee& model, const examples::DistributedRun& job) {
  if (job.several()) {
    const auto states = ng::distributed::all_gather_text(
        ng::distributed::ProcessGroup::world(),
        std::to_string(model.generator.seed()) + " " + std::to_string(model.generator.offset()));
    metadata[kRanksKey] = std::to_string(job.size);
    for (std::size_t r = 0; r < states.size(); ++r)
      metadata[kRankGeneratorKey + std::to_string(r)] = states[r];
  }
  if (job.writes())
    ng::io::save_training_state(path, model.model, model.optimizer, model.generator, step,
                                metadata);
}

// The training state's step and metadata; each rank takes its own generator.
std::int64_t load_training_state(const std::string& path, ng::io::Metadata& metadata,
                                 const Trainee& model, const examples::DistributedRun& job) {
  const std::int64_t step =
      ng::io::load_training_state(path, model.model, model.optimizer, model.generator, &metadata);
  const auto ranks = metadata.find(kRanksKey);
  const std::string saved_by = ranks == metadata.end() ? "1" : ranks->second;
  NG_CHECK(saved_by == std::to_string(job.size), "train --resume", "'", path,
           "' was written by a job of ", saved_by, " process(es); resume it with as many ",
           "(mpirun -np ", saved_by, saved_by == "1" ? ", or without --distributed)" : ")");
  if (job.several()) {
    std::istringstream state(metadata.at(kRankGeneratorKey + std::to_string(job.rank)));
    std::uint64_t seed = 0, offset = 0;
    state >> seed >> offset;
    NG_CHECK(!state.fail(), "train --resume", "'", path, "' holds a damaged generator state");
    model.generator.manual_seed(seed);
    model.generator.set_offset(offset);
  }
  return step;
}

}  // namespace

void check_new_run(const ModelFolder& folder, TrainingSettings& t) {
  const std::string op = folder.program() + " train";
  const auto paths = {&t.train_source, &t.train_target, &t.dev_source, &t.dev_target};
  for (std::string* path : paths) {
    std::error_code ec;
    const auto absolute = fs::absolute(*path, ec);
    if (!ec) *path = absolute.lexically_normal().string();
  }
  NG_CHECK(!folder.has_config(), op, folder.path(),
           " already holds a model: pass --resume to continue it, or choose another folder");
  for (const std::string* path : paths) {
    std::error_code ec;
    NG_CHECK(fs::is_regular_file(*path, ec), op, "cannot read '", *path, "'");
  }
}

RunData load_run_data(std::optional<ng::text::SubwordTokenizer> tokenizer,
                      const TrainingSettings& t, std::int64_t vocabulary_size,
                      const std::string& program, std::ostream* messages) {
  const std::string op = program + " train";
  auto say = [&](const std::string& text) {
    if (messages != nullptr) *messages << text << std::flush;
  };
  if (!tokenizer) {
    say("training the tokenizer on " + t.train_source + " and " + t.train_target + "\n");
    // Line counts first: a misaligned corpus is refused before any training.
    const auto source_lines = ng::text::read_text_lines(t.train_source).size();
    const auto target_lines = ng::text::read_text_lines(t.train_target).size();
    NG_CHECK(source_lines == target_lines, op, t.train_source, " has ", source_lines, " lines but ",
             t.train_target, " has ", target_lines);
    tokenizer = ng::text::SubwordTokenizer::train(
        {t.train_source, t.train_target},
        {.vocabulary_size = static_cast<std::int32_t>(vocabulary_size)});
  }
  NG_CHECK(tokenizer->vocabulary_size() == vocabulary_size, op, "the tokenizer has ",
           tokenizer->vocabulary_size(), " pieces, but the model's vocabulary is ",
           vocabulary_size);
  auto train = ng::text::ParallelDataset::load(t.train_source, t.train_target, *tokenizer,
                                               {.max_length = t.max_length});
  auto dev = ng::text::ParallelDataset::load(t.dev_source, t.dev_target, *tokenizer, {});
  auto references = ng::text::strip_line_ends(ng::text::read_text_lines(t.dev_target));
  say("training pairs: " + std::to_string(train.size()) + " (" + train.statistics().cache +
      "), dev pairs: " + std::to_string(dev.size()) + "\n");
  return RunData{std::move(*tokenizer), std::move(train), std::move(dev), std::move(references)};
}

StepReport backward_and_step(const ng::Tensor& loss, ng::nn::Module& model,
                             ng::optim::Optimizer& optimizer, double clip_norm,
                             std::int64_t target_tokens) {
  loss.backward();
  StepReport step{.loss = loss.item(), .learning_rate = optimizer.lr()};
  step.token_loss = step.loss;
  step.target_tokens = target_tokens;
  step.gradient_norm =
      ng::optim::clip_grad_norm(model.parameters(), clip_norm > 0 ? clip_norm : 1e300);
  optimizer.step();
  return step;
}

std::unique_ptr<ng::distributed::DataParallel> data_parallel(ng::nn::Module& model,
                                                             ng::Generator& generator,
                                                             const examples::DistributedRun& job) {
  if (!job.several()) return nullptr;
  auto parallel = std::make_unique<ng::distributed::DataParallel>(model);
  if (job.rank > 0)  // a stream of its own, far from rank 0's seed and from the others'
    generator.manual_seed(generator.seed() +
                          0x9E3779B97F4A7C15ULL * static_cast<unsigned>(job.rank));
  return parallel;
}

void wait_for_rank_zero() {
  auto& group = ng::distributed::ProcessGroup::world();
  const auto timeout = group.timeout();
  group.set_timeout(std::chrono::hours(24 * 7));
  group.barrier();
  group.set_timeout(timeout);
}

TrainSummary run_training_loop(const ModelFolder& folder, ng::text::TranslationBatches& batches,
                               const ng::text::SubwordTokenizer& tokenizer,
                               const TrainingSettings& t, const Trainee& model,
                               const LoopOptions& options) {
  const std::string op = folder.program() + " train";
  TrainSummary summary;
  LoopState loop;
  examples::LoopRecord record;
  const bool writes = options.job.writes();
  std::optional<TrainLog> log;
  if (writes) log.emplace(folder.file("train.csv"), folder.program());
  if (options.resume) {
    const auto steps = folder.checkpoint_steps();
    NG_CHECK(!steps.empty(), op, "--resume: ", folder.path(), " holds no training state");
    const std::string path = folder.checkpoint(steps.back());
    ng::io::Metadata metadata;
    record.step = load_training_state(path, metadata, model, options.job);
    tokenizer.check_checkpoint(metadata, path);
    loop = LoopState::from_metadata(metadata, path, folder.program());
    batches.seek(loop.position);
    // No BLEU is below 0: -1 stands for none yet.
    if (loop.best_bleu >= 0) record.best = loop.best_bleu;
    record.validations_without_best = loop.evaluations_without_best;
    if (options.messages != nullptr)
      *options.messages << "resumed from " << path << " at step " << record.step << "\n";
  }
  if (log) log->start(record.step);
  const ng::io::Metadata fingerprint{{ng::text::tokenizer_metadata_key, tokenizer.fingerprint()}};
  const auto with_step = [&](ng::io::Metadata metadata) {
    metadata["step"] = std::to_string(record.step);
    return metadata;
  };

  examples::ProgressLine progress({.out = options.messages,
                                   .redraw = options.progress_bar,
                                   .total_steps = t.max_steps,
                                   .rate_unit = "tok/s"});
  const auto start = std::chrono::steady_clock::now();
  const double wall_before = loop.wall_seconds;
  // What a step measured, for its row of train.csv once its dev BLEU is known.
  StepReport result;
  double step_seconds = 0, tokens_per_second = 0, dev_loss = -1;
  BleuEvaluation evaluation;
  const auto train_step = [&] {
    const auto step_start = std::chrono::steady_clock::now();
    const auto batch = batches.next();
    result = model.train_step(batch, record.step);
    summary.losses.push_back(result.loss);
    step_seconds = examples::seconds_since(step_start);
    tokens_per_second =
        static_cast<double>(batch.source_tokens + batch.target_tokens) / step_seconds;
    loop.wall_seconds = wall_before + examples::seconds_since(start);
    // The dev loss at its own interval, measured before the dev BLEU as it always was.
    dev_loss = (record.step + 1) % t.dev_loss_every == 0 ? model.dev_loss() : -1;
    return result.loss;
  };
  const auto after_step = [&](const examples::StepDone& done) {
    if (done.new_best) {
      ng::io::Metadata metadata = with_step(fingerprint);
      metadata["dev_bleu"] = evaluation.text;
      if (writes) ng::io::save(model.model, folder.file("best.safetensors"), metadata);
    }
    if (done.score)
      progress.note("step " + std::to_string(done.step) + ": dev " + evaluation.text + "\n");
    if (log)
      log->append({.step = done.step,
                   .wall_seconds = loop.wall_seconds,
                   .train_loss = result.loss,
                   .train_token_loss = result.token_loss,
                   .dev_token_loss = dev_loss,
                   .dev_bleu = done.score.value_or(-1),
                   .tokens_per_second = tokens_per_second,
                   .step_seconds = step_seconds,
                   .learning_rate = result.learning_rate});
    progress.update(done.step, result.token_loss, tokens_per_second);
    if (dev_loss >= 0) progress.report("dev loss " + examples::format_number("%.3f", dev_loss));
  };
  const auto save_state = [&](const examples::LoopRecord& saved) {
    loop.position = batches.position();
    loop.best_bleu = saved.best.value_or(-1);
    loop.evaluations_without_best = saved.validations_without_best;
    save_training_state(folder.checkpoint(saved.step), saved.step,
                        loop.to_metadata(tokenizer.fingerprint()), model, options.job);
    if (!writes) return;
    ng::io::save(model.model, folder.file("model.safetensors"), with_step(fingerprint));
    folder.prune_checkpoints(t.keep_checkpoints);
  };
  // In data-parallel training all ranks stop when one is out of time.
  const auto all_ranks_agree = [&](bool out_of_time) {
    if (!options.job.several()) return out_of_time;
    return ng::distributed::sum_over_ranks(ng::distributed::ProcessGroup::world(),
                                           {out_of_time ? 1.0 : 0.0})[0] > 0;
  };

  const auto dev_bleu = [&] {
    evaluation = model.dev_bleu();
    return evaluation.bleu;
  };

  examples::StepProfile step_profile(options.profile, model.model, folder.program());
  static_cast<examples::LoopEnd&>(summary) =
      examples::run_training_loop({.steps = t.max_steps,
                                   .seconds = t.max_seconds,
                                   .validate_every = t.dev_bleu_every,
                                   .patience = t.patience,
                                   .save_every = t.checkpoint_every},
                                  record,
                                  {.train_step = step_profile.around(train_step),
                                   .validate = dev_bleu,
                                   .better = examples::Better::Higher,
                                   .after_step = after_step,
                                   .save_state = save_state,
                                   .agree_to_stop = all_ranks_agree});
  summary.best_bleu = record.best.value_or(-1);
  progress.note("stopped at step " + std::to_string(summary.last_step) + " by " +
                summary.stopped_because + "\n");
  return summary;
}

}  // namespace nmt
