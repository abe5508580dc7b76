#include "settings.h"

#include <cmath>

namespace transformer_nmt {

namespace ng = normgrad;

Settings preset(const std::string& name) {
  Settings settings;
  auto& m = settings.model;
  auto& t = settings.training;
  if (name == "cpu") {
    // The defaults.
  } else if (name == "tiny") {  // seconds a run: for checking a pipeline, not for learning
    m.vocabulary_size = 100;
    m.model_size = 16;
    m.feed_forward_size = 32;
    m.heads = 2;
    m.encoder_layers = 1;
    m.decoder_layers = 1;
    t.batch_tokens = 200;
    t.max_length = 50;
    t.learning_rate = 3e-3;
    t.warmup_steps = 4;
  } else if (name == "small") {
    m.vocabulary_size = 4000;
    m.model_size = 128;
    m.feed_forward_size = 512;
    m.encoder_layers = 2;
    m.decoder_layers = 2;
    t.batch_tokens = 1500;
    t.max_length = 50;
    t.learning_rate = 1.5e-3;
    t.warmup_steps = 400;
  } else if (name == "base") {
    m.vocabulary_size = 32000;
    m.model_size = 512;
    m.feed_forward_size = 2048;
    m.heads = 8;
    m.encoder_layers = 6;
    m.decoder_layers = 6;
    t.batch_tokens = 25000;
    t.max_length = 250;
    t.warmup_steps = 4000;
    t.learning_rate = 1.0 / std::sqrt(512.0 * 4000.0);  // Vaswani et al.'s peak, 7.0e-4
    t.max_steps = 300000;
    t.dev_loss_every = 1000;
    t.dev_bleu_every = 10000;
    t.checkpoint_every = 5000;
  } else {
    throw ng::Error("transformer_nmt: unknown preset '" + name +
                    "'; expected tiny, cpu, small or base");
  }
  return settings;
}

void check(const Settings& s) {
  check(s.model);
  const auto& t = s.training;
  const auto positive = [](const char* what, double value) {
    NG_CHECK(value > 0, "transformer_nmt", what, " must be positive, got ", value);
  };
  positive("batch (tokens)", static_cast<double>(t.batch_tokens));
  NG_CHECK(t.max_length == 0 || t.batch_tokens > t.max_length, "transformer_nmt", "a batch of ",
           t.batch_tokens, " tokens cannot hold a pair of max length ", t.max_length);
  positive("warm-up steps", static_cast<double>(t.warmup_steps));
  NG_CHECK(t.adam_beta2 > 0 && t.adam_beta2 < 1, "transformer_nmt",
           "Adam's beta2 must be in (0, 1), got ", t.adam_beta2);
  nmt::check_shared_settings(t, "transformer_nmt");
}

}  // namespace transformer_nmt
