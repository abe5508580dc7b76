#include "settings.h"

#include <cmath>

#include "nmt/model_folder.h"

namespace transformer_nmt {

namespace ng = normgrad;

Settings preset(const std::string& name) {
  Settings settings;
  auto& m = settings.model;
  auto& t = settings.training;
  if (name == "cpu") {
    // The defaults.
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
    throw ng::Error("transformer_nmt: unknown preset '" + name + "'; expected cpu, small or base");
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
  NG_CHECK(t.max_length >= 0, "transformer_nmt", "max length must be >= 0 (0: no limit), got ",
           t.max_length);
  NG_CHECK(t.max_length == 0 || t.batch_tokens > t.max_length, "transformer_nmt", "a batch of ",
           t.batch_tokens, " tokens cannot hold a pair of max length ", t.max_length);
  positive("learning rate", t.learning_rate);
  positive("warm-up steps", static_cast<double>(t.warmup_steps));
  NG_CHECK(t.adam_beta2 > 0 && t.adam_beta2 < 1, "transformer_nmt",
           "Adam's beta2 must be in (0, 1), got ", t.adam_beta2);
  NG_CHECK(t.label_smoothing >= 0 && t.label_smoothing < 1, "transformer_nmt",
           "label smoothing must be in [0, 1), got ", t.label_smoothing);
  NG_CHECK(t.clip_norm >= 0, "transformer_nmt", "clip norm must be >= 0 (0: none), got ",
           t.clip_norm);
  positive("steps", static_cast<double>(t.max_steps));
  NG_CHECK(t.max_seconds >= 0, "transformer_nmt",
           "time budget must be >= 0 seconds (0: none), got ", t.max_seconds);
  positive("dev loss interval", static_cast<double>(t.dev_loss_every));
  positive("dev BLEU interval", static_cast<double>(t.dev_bleu_every));
  positive("dev beam", static_cast<double>(t.dev_beam));
  NG_CHECK(t.patience >= 0, "transformer_nmt", "patience must be >= 0, got ", t.patience);
  positive("checkpoint interval", static_cast<double>(t.checkpoint_every));
  positive("checkpoints kept", static_cast<double>(t.keep_checkpoints));
}

nlohmann::json to_json(const Settings& s) {
  const auto& m = s.model;
  const auto& t = s.training;
  return {{"model",
           {{"vocabulary_size", m.vocabulary_size},
            {"model_size", m.model_size},
            {"feed_forward_size", m.feed_forward_size},
            {"heads", m.heads},
            {"encoder_layers", m.encoder_layers},
            {"decoder_layers", m.decoder_layers},
            {"dropout", m.dropout},
            {"norm", m.norm},
            {"pre_norm", m.pre_norm},
            {"tie_embeddings", m.tie_embeddings}}},
          {"training",
           {{"train_source", t.train_source},
            {"train_target", t.train_target},
            {"dev_source", t.dev_source},
            {"dev_target", t.dev_target},
            {"batch_tokens", t.batch_tokens},
            {"max_length", t.max_length},
            {"learning_rate", t.learning_rate},
            {"warmup_steps", t.warmup_steps},
            {"adam_beta2", t.adam_beta2},
            {"label_smoothing", t.label_smoothing},
            {"clip_norm", t.clip_norm},
            {"max_steps", t.max_steps},
            {"max_seconds", t.max_seconds},
            {"dev_loss_every", t.dev_loss_every},
            {"dev_bleu_every", t.dev_bleu_every},
            {"dev_beam", t.dev_beam},
            {"patience", t.patience},
            {"checkpoint_every", t.checkpoint_every},
            {"keep_checkpoints", t.keep_checkpoints},
            {"seed", t.seed}}}};
}

Settings settings_from_json(const nlohmann::json& json, const std::string& origin) {
  try {
    Settings s;
    const auto& m = json.at("model");
    auto& model = s.model;
    m.at("vocabulary_size").get_to(model.vocabulary_size);
    m.at("model_size").get_to(model.model_size);
    m.at("feed_forward_size").get_to(model.feed_forward_size);
    m.at("heads").get_to(model.heads);
    m.at("encoder_layers").get_to(model.encoder_layers);
    m.at("decoder_layers").get_to(model.decoder_layers);
    m.at("dropout").get_to(model.dropout);
    m.at("norm").get_to(model.norm);
    m.at("pre_norm").get_to(model.pre_norm);
    m.at("tie_embeddings").get_to(model.tie_embeddings);
    const auto& t = json.at("training");
    auto& r = s.training;
    t.at("train_source").get_to(r.train_source);
    t.at("train_target").get_to(r.train_target);
    t.at("dev_source").get_to(r.dev_source);
    t.at("dev_target").get_to(r.dev_target);
    t.at("batch_tokens").get_to(r.batch_tokens);
    t.at("max_length").get_to(r.max_length);
    t.at("learning_rate").get_to(r.learning_rate);
    t.at("warmup_steps").get_to(r.warmup_steps);
    t.at("adam_beta2").get_to(r.adam_beta2);
    t.at("label_smoothing").get_to(r.label_smoothing);
    t.at("clip_norm").get_to(r.clip_norm);
    t.at("max_steps").get_to(r.max_steps);
    t.at("max_seconds").get_to(r.max_seconds);
    t.at("dev_loss_every").get_to(r.dev_loss_every);
    t.at("dev_bleu_every").get_to(r.dev_bleu_every);
    t.at("dev_beam").get_to(r.dev_beam);
    t.at("patience").get_to(r.patience);
    t.at("checkpoint_every").get_to(r.checkpoint_every);
    t.at("keep_checkpoints").get_to(r.keep_checkpoints);
    t.at("seed").get_to(r.seed);
    check(s);
    return s;
  } catch (const nlohmann::json::exception& error) {
    throw ng::Error(std::string("transformer_nmt: ") + origin +
                    " is not a transformer_nmt configuration: " + error.what());
  }
}

std::string describe(const Settings& settings) { return nmt::describe_config(to_json(settings)); }

}  // namespace transformer_nmt
