#include "settings.h"

#include <cmath>

#include "nmt/model_folder.h"
#include "nmt/training_settings.h"

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

nlohmann::json to_json(const Settings& s) {
  const auto& m = s.model;
  const auto& t = s.training;
  nlohmann::json training = {{"batch_tokens", t.batch_tokens},
                             {"warmup_steps", t.warmup_steps},
                             {"adam_beta2", t.adam_beta2}};
  nmt::write_shared_settings(t, training);
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
            {"tie_embeddings", m.tie_embeddings},
            {"precision", m.precision}}},
          {"training", training}};
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
    model.precision = m.value("precision", "float32");  // folders written before it existed
    const auto& t = json.at("training");
    t.at("batch_tokens").get_to(s.training.batch_tokens);
    t.at("warmup_steps").get_to(s.training.warmup_steps);
    t.at("adam_beta2").get_to(s.training.adam_beta2);
    nmt::read_shared_settings(t, s.training);
    check(s);
    return s;
  } catch (const nlohmann::json::exception& error) {
    throw ng::Error(std::string("transformer_nmt: ") + origin +
                    " is not a transformer_nmt configuration: " + error.what());
  }
}

std::string describe(const Settings& settings) { return nmt::describe_config(to_json(settings)); }

}  // namespace transformer_nmt
