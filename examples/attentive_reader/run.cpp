#include "run.h"

#include "common/validated_run.h"

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
                                              ng::Device device, bool progress_bar, std::FILE* log,
                                              const examples::ProfileFlags& profile) {
  const RunData data = load_run_data(folder, run.data);
  run.model.vocabulary = data.vocabulary.size();
  Trainer trainer(run.model, run.training, data.training, data.validation, data.vocabulary, device);
  if (!folder.has_config()) folder.write_config(run);
  if (!folder.has("vocabulary.txt")) data.vocabulary.save(folder.file("vocabulary.txt"));
  char sizes[160];
  std::snprintf(
      sizes, sizeof sizes, "%zu training and %zu validation questions, %lld words (%lld entities)",
      data.training.size(), data.validation.size(), static_cast<long long>(data.vocabulary.size()),
      static_cast<long long>(data.vocabulary.entities()));
  examples::train_to_validations(folder, run.training, trainer,
                                 {.label = run.model.norm,
                                  .data = sizes,
                                  .progress_bar = progress_bar,
                                  .log = log,
                                  .profile = profile});
  return trainer.history();
}

}  // namespace attentive_reader
