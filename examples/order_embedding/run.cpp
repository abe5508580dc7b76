#include "run.h"

#include "common/validated_run.h"

namespace order_embedding {

namespace ng = normgrad;

RunData load_run_data(const ModelFolder& folder, const DataSettings& data) {
  RetrievalSplit train = load_split(data.folder, "train", data.features, data.train_images);
  RetrievalSplit dev = load_split(data.folder, "dev", data.features, data.dev_images);
  std::vector<std::string> captions = train.captions;
  captions.insert(captions.end(), dev.captions.begin(), dev.captions.end());
  Vocabulary vocabulary = folder.has("vocabulary.txt")
                              ? Vocabulary::load(folder.file("vocabulary.txt"))
                              : Vocabulary::build(captions);
  return {std::move(train), std::move(dev), std::move(vocabulary)};
}

std::vector<ValidationRecord> train_in_folder(const ModelFolder& folder, RunConfig run,
                                              ng::Device device, bool progress_bar, std::FILE* log,
                                              const examples::ProfileFlags& profile) {
  const RunData data = load_run_data(folder, run.data);
  run.model.vocabulary = data.vocabulary.size();
  run.model.image_dim = data.train.feature_dim();
  Trainer trainer(run.model, run.training, data.train, data.dev, data.vocabulary, device);
  if (!folder.has_config()) folder.write_config(run);
  if (!folder.has("vocabulary.txt")) data.vocabulary.save(folder.file("vocabulary.txt"));
  char sizes[160];
  std::snprintf(sizes, sizeof sizes,
                "%lld training images (%lld captions each), %lld dev images, %lld words",
                static_cast<long long>(data.train.image_count()),
                static_cast<long long>(data.train.captions_per_image),
                static_cast<long long>(data.dev.image_count()),
                static_cast<long long>(data.vocabulary.size()));
  examples::train_to_validations(folder, run.training, trainer,
                                 {.label = run.model.norm,
                                  .data = sizes,
                                  .progress_bar = progress_bar,
                                  .log = log,
                                  .profile = profile});
  return trainer.history();
}

}  // namespace order_embedding
