#include "program.h"

#include "nmt/checkpoint_average.h"

namespace transformer_nmt {

namespace ng = normgrad;

nmt::TrainSummary train(const TrainOptions& options) { return nmt::train<Program>(options); }

std::vector<std::int64_t> average_checkpoints(const ModelFolder& folder, std::int64_t last,
                                              const std::string& output) {
  NG_CHECK(folder.has_config(), "transformer_nmt average", folder.path(),
           " is not a transformer_nmt model folder (no config.json)");
  NG_CHECK(last >= 1, "transformer_nmt average", "--last must be at least 1, got ", last);
  std::string fingerprint;
  const Settings settings = folder.read_config(&fingerprint);
  const auto steps = folder.checkpoint_steps();
  NG_CHECK(static_cast<std::int64_t>(steps.size()) >= last, "transformer_nmt average",
           folder.path(), " holds ", steps.size(), " training states, fewer than --last ", last,
           " (train keeps --keep-checkpoints of them)");
  const std::vector<std::int64_t> chosen(steps.end() - last, steps.end());
  std::vector<std::string> paths;
  std::string names;
  for (const std::int64_t step : chosen) {
    paths.push_back(folder.checkpoint(step));
    names += (names.empty() ? "" : " ") + std::to_string(step);
  }
  const ng::nn::StateDict mean = nmt::average_model_weights(paths, "transformer_nmt average");
  // The mean must fit the folder's model before it is written.
  ng::Generator generator(0);
  TransformerNmt model(settings.model, generator);
  model.load_state_dict(mean, /*strict=*/true);
  ng::io::save(model, folder.file(output),
               {{ng::text::tokenizer_metadata_key, fingerprint}, {"averaged_steps", names}});
  return chosen;
}

}  // namespace transformer_nmt
