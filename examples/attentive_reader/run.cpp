#include "run.h"

#include <chrono>

#include "common/number_text.h"

namespace attentive_reader {

namespace ng = normgrad;

RunData load_run_data(const ModelFolder& folder, const DataSettings& data) {
  std::vector<Question> training = load_questions(data.folder, "training", data.training_questions);
  std::vector<Question> validation =
      load_questions(data.folder, "validation", data.validation_questions);
  ReaderVocabulary vocabulary = folder.has("vocabulary.txt")
                                    ? ReaderVocabulary::load(folder.file("vocabulary.txt"))
                                    : ReaderVocabulary::build(training, 2, validation);
  return {std::move(training), std::move(validation), std::move(vocabulary)};
}

std::vector<ValidationRecord> train_in_folder(const ModelFolder& folder, RunConfig run,
                                              ng::Device device, bool progress_bar,
                                              std::FILE* log) {
  const RunData data = load_run_data(folder, run.data);
  run.model.vocabulary = data.vocabulary.size();
  Trainer trainer(run.model, run.training, data.training, data.validation, data.vocabulary, device);
  if (!folder.has_config()) folder.write_config(run);
  if (!folder.has("vocabulary.txt")) data.vocabulary.save(folder.file("vocabulary.txt"));
  if (folder.has("state.safetensors")) {
    trainer.load_state(folder.file("state.safetensors"));
    std::fprintf(stderr, "attentive_reader: continuing '%s' after step %lld of %lld\n",
                 folder.path().c_str(), static_cast<long long>(trainer.steps_done()),
                 static_cast<long long>(run.training.steps));
  }
  std::int64_t parameters = 0;
  for (const ng::Tensor& parameter : trainer.model().parameters()) parameters += parameter.numel();
  std::fprintf(log,
               "%s: %lld parameters, %zu training and %zu validation questions, %lld words "
               "(%lld entities)\n",
               run.model.norm.c_str(), static_cast<long long>(parameters), data.training.size(),
               data.validation.size(), static_cast<long long>(data.vocabulary.size()),
               static_cast<long long>(data.vocabulary.entities()));
  const auto start = std::chrono::steady_clock::now();
  const std::int64_t first_step = trainer.steps_done();
  double last_draw = -1;
  const auto on_step = [&](const StepReport& report) {
    if (!progress_bar) return;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (elapsed - last_draw < 0.1 && report.step != report.steps) return;
    last_draw = elapsed;
    const double left = elapsed / static_cast<double>(report.step - first_step) *
                        static_cast<double>(report.steps - report.step);
    std::fprintf(stderr, "\r  step %lld/%lld  loss %.3f  %s left   ",
                 static_cast<long long>(report.step), static_cast<long long>(report.steps),
                 report.loss, examples::format_duration(left).c_str());
    std::fflush(stderr);
  };
  while (!trainer.finished()) {
    const ValidationRecord r = trainer.run_to_validation(on_step);
    if (trainer.improved()) ng::io::save(trainer.model(), folder.file("model.safetensors"));
    trainer.save_state(folder.file("state.safetensors"));
    folder.write_text("train.csv", history_csv(trainer.history()));
    if (progress_bar) std::fprintf(stderr, "\r%*s\r", 70, "");
    std::fprintf(log,
                 "step %6lld/%lld  loss %.3f  train error %5.1f%%  valid error %5.1f%% (loss "
                 "%.3f)%s  %.0f s\n",
                 static_cast<long long>(r.step), static_cast<long long>(run.training.steps),
                 r.train_loss, 100 * r.train_error, 100 * r.valid_error, r.valid_loss,
                 trainer.improved() ? " *" : "", r.seconds);
    std::fflush(log);
  }
  const ValidationRecord* best = trainer.best();
  std::fprintf(log, "%s: lowest validation error %.2f%% at step %lld; model folder %s\n",
               run.model.norm.c_str(), 100 * best->valid_error, static_cast<long long>(best->step),
               folder.path().c_str());
  return trainer.history();
}

}  // namespace attentive_reader
