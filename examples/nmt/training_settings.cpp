#include "nmt/training_settings.h"

namespace nmt {

void check_shared_settings(const TrainingSettings& t, const std::string& program) {
  const auto positive = [&](const char* what, double value) {
    NG_CHECK(value > 0, program, what, " must be positive, got ", value);
  };
  NG_CHECK(t.max_length >= 0, program, "max length must be >= 0 (0: no limit), got ", t.max_length);
  positive("learning rate", t.learning_rate);
  NG_CHECK(t.label_smoothing >= 0 && t.label_smoothing < 1, program,
           "label smoothing must be in [0, 1), got ", t.label_smoothing);
  NG_CHECK(t.clip_norm >= 0, program, "clip norm must be >= 0 (0: none), got ", t.clip_norm);
  positive("steps", static_cast<double>(t.max_steps));
  NG_CHECK(t.max_seconds >= 0, program, "time budget must be >= 0 seconds (0: none), got ",
           t.max_seconds);
  positive("dev loss interval", static_cast<double>(t.dev_loss_every));
  positive("dev BLEU interval", static_cast<double>(t.dev_bleu_every));
  positive("dev beam", static_cast<double>(t.dev_beam));
  NG_CHECK(t.patience >= 0, program, "patience must be >= 0, got ", t.patience);
  positive("checkpoint interval", static_cast<double>(t.checkpoint_every));
  positive("checkpoints kept", static_cast<double>(t.keep_checkpoints));
}

std::string describe_config(const nlohmann::json& config) {
  std::string text;
  for (const auto& [part, values] : config.items()) {
    text += part + ":\n";
    for (const auto& [key, value] : values.items())
      text += "  " + key + " = " + value.dump() + "\n";
  }
  return text;
}

}  // namespace nmt
