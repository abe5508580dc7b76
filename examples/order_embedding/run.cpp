#include "run.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "common/number_text.h"

namespace order_embedding {

namespace ng = normgrad;
namespace fs = std::filesystem;

namespace {

// One line on stderr, redrawn at most ten times a second: a bar over the run's steps, the
// smoothed loss and the time left.
class ProgressLine {
 public:
  ProgressLine(bool bar, std::int64_t first_step) : bar_(bar), first_step_(first_step) {}
  void update(const StepReport& report) {
    smoothed_ =
        report.step == first_step_ + 1 ? report.loss : 0.95 * smoothed_ + 0.05 * report.loss;
    if (!bar_) return;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (elapsed - last_draw_ < 0.1 && report.step != report.steps) return;
    last_draw_ = elapsed;
    constexpr int width = 30;
    const auto filled = static_cast<std::size_t>(width * report.step / report.steps);
    const double left = elapsed / static_cast<double>(report.step - first_step_) *
                        static_cast<double>(report.steps - report.step);
    std::fprintf(stderr, "\r  [%s%s] step %lld/%lld  loss %.3f  %s left   ",
                 std::string(filled, '=').c_str(), std::string(width - filled, ' ').c_str(),
                 static_cast<long long>(report.step), static_cast<long long>(report.steps),
                 smoothed_, examples::format_duration(left).c_str());
    std::fflush(stderr);
  }
  void clear() const {
    if (bar_) std::fprintf(stderr, "\r%*s\r", 90, "");
  }

 private:
  bool bar_;
  std::int64_t first_step_;
  double smoothed_ = 0, last_draw_ = -1;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

std::string metrics_text(const ng::data::RankingMetrics& m) {
  using examples::format_number;
  return "R@1 " + format_number("%.1f", m.recall_at[0]) + " R@5 " +
         format_number("%.1f", m.recall_at[1]) + " R@10 " + format_number("%.1f", m.recall_at[2]) +
         " mean rank " + format_number("%.1f", m.mean_rank);
}

std::int64_t parameter_count(const ng::nn::Module& module) {
  std::int64_t count = 0;
  for (const ng::Tensor& parameter : module.parameters()) count += parameter.numel();
  return count;
}

}  // namespace

std::string scores_text(const ng::data::RetrievalScores& scores) {
  return "caption " + metrics_text(scores.caption) + " | image " + metrics_text(scores.image);
}

RunData load_run_data(const ModelFolder& folder, const DataSettings& data) {
  RetrievalSplit train = load_split(data.folder, "train", data.features, data.train_images);
  RetrievalSplit dev = load_split(data.folder, "dev", data.features, data.dev_images);
  std::vector<std::string> captions = train.captions;
  captions.insert(captions.end(), dev.captions.begin(), dev.captions.end());
  Vocabulary vocabulary = fs::exists(folder.file("vocabulary.txt"))
                              ? Vocabulary::load(folder.file("vocabulary.txt"))
                              : Vocabulary::build(captions);
  return {std::move(train), std::move(dev), std::move(vocabulary)};
}

std::vector<ValidationRecord> train_in_folder(const ModelFolder& folder, RunConfig run,
                                              ng::Device device, bool progress_bar,
                                              std::FILE* log) {
  const RunData data = load_run_data(folder, run.data);
  run.model.vocabulary = data.vocabulary.size();
  run.model.image_dim = data.train.feature_dim();
  Trainer trainer(run.model, run.training, data.train, data.dev, data.vocabulary, device);
  if (!folder.has_config()) folder.write_config(run);
  if (!fs::exists(folder.file("vocabulary.txt")))
    data.vocabulary.save(folder.file("vocabulary.txt"));
  if (fs::exists(folder.file("state.safetensors"))) {
    trainer.load_state(folder.file("state.safetensors"));
    std::fprintf(stderr, "order_embedding: continuing '%s' after step %lld of %lld\n",
                 folder.path().c_str(), static_cast<long long>(trainer.steps_done()),
                 static_cast<long long>(run.training.steps));
  }
  std::fprintf(log,
               "%s: %lld parameters, %lld training images (%lld captions each), %lld dev "
               "images, %lld words\n",
               run.model.norm.c_str(), static_cast<long long>(parameter_count(trainer.model())),
               static_cast<long long>(data.train.image_count()),
               static_cast<long long>(data.train.captions_per_image),
               static_cast<long long>(data.dev.image_count()),
               static_cast<long long>(data.vocabulary.size()));
  ProgressLine progress(progress_bar, trainer.steps_done());
  while (!trainer.finished()) {
    const ValidationRecord r =
        trainer.run_to_validation([&](const StepReport& step) { progress.update(step); });
    if (trainer.improved()) ng::io::save(trainer.model(), folder.file("model.safetensors"));
    trainer.save_state(folder.file("state.safetensors"));
    folder.write_text("train.csv", history_csv(trainer.history()));
    progress.clear();
    std::fprintf(log, "step %6lld/%lld  loss %8.3f  dev %s%s  %.0f s\n",
                 static_cast<long long>(r.step), static_cast<long long>(run.training.steps),
                 r.train_loss, scores_text(r.dev).c_str(), trainer.improved() ? " *" : "",
                 r.seconds);
    std::fflush(log);
  }
  const ValidationRecord* best = trainer.best();
  std::fprintf(log, "%s: best dev at step %lld: %s; model folder %s\n", run.model.norm.c_str(),
               static_cast<long long>(best->step), scores_text(best->dev).c_str(),
               folder.path().c_str());
  return trainer.history();
}

}  // namespace order_embedding
