#include "settings.h"

#include <utility>

#include "nmt/model_folder.h"

namespace gru_nmt {

namespace ng = normgrad;

Settings preset(const std::string& name) {
  Settings settings;
  if (name == "cpu") {
    settings.model.embedding_size = 128;
    settings.model.hidden_size = 256;
    settings.model.vocabulary_size = 8000;
    settings.training.learning_rate = 5e-4;
  } else if (name == "small") {
    settings.model.embedding_size = 64;
    settings.model.hidden_size = 128;
    settings.model.vocabulary_size = 4000;
    settings.training.learning_rate = 1e-3;
    settings.training.max_length = 50;
  } else if (name == "paper") {
    settings.model.embedding_size = 512;
    settings.model.hidden_size = 1024;
    settings.model.vocabulary_size = 32000;
    settings.training.learning_rate = 1e-4;
    settings.training.max_steps = 300000;
    settings.training.dev_loss_every = 1000;
    settings.training.dev_bleu_every = 10000;
    settings.training.checkpoint_every = 10000;
  } else {
    throw ng::Error("gru_nmt: unknown preset '" + name + "'; expected cpu, small or paper");
  }
  return settings;
}

void check(const Settings& s) {
  const auto& t = s.training;
  const auto positive = [](const char* what, double value) {
    NG_CHECK(value > 0, "gru_nmt", what, " must be positive, got ", value);
  };
  positive("embedding size", static_cast<double>(s.model.embedding_size));
  positive("hidden size", static_cast<double>(s.model.hidden_size));
  NG_CHECK(s.model.vocabulary_size >= 16, "gru_nmt", "vocabulary size must be at least 16, got ",
           s.model.vocabulary_size);
  ng::nn::NormSpec spec(s.model.norm);  // an Error for an unknown spec
  NG_CHECK(spec.kind != ng::nn::NormKind::BatchNorm, "gru_nmt", "norm '", s.model.norm,
           "' has no place in a recurrent model; use none, layernorm, l2norm, rmsnorm, prmsnorm:p "
           "or weightnorm");
  for (const auto& [what, p] : {std::pair{"embedding dropout", s.model.dropout_embedding},
                                std::pair{"hidden dropout", s.model.dropout_hidden}}) {
    NG_CHECK(p >= 0 && p < 1, "gru_nmt", what, " must be in [0, 1), got ", p);
  }
  positive("batch (sentences)", static_cast<double>(t.batch_sentences));
  NG_CHECK(t.max_length >= 0, "gru_nmt", "max length must be >= 0 (0: no limit), got ",
           t.max_length);
  positive("learning rate", t.learning_rate);
  NG_CHECK(t.label_smoothing >= 0 && t.label_smoothing < 1, "gru_nmt",
           "label smoothing must be in [0, 1), got ", t.label_smoothing);
  positive("steps", static_cast<double>(t.max_steps));
  NG_CHECK(t.max_seconds >= 0, "gru_nmt", "time budget must be >= 0 seconds (0: none), got ",
           t.max_seconds);
  positive("dev loss interval", static_cast<double>(t.dev_loss_every));
  positive("dev BLEU interval", static_cast<double>(t.dev_bleu_every));
  positive("dev beam", static_cast<double>(t.dev_beam));
  NG_CHECK(t.patience >= 0, "gru_nmt", "patience must be >= 0, got ", t.patience);
  positive("checkpoint interval", static_cast<double>(t.checkpoint_every));
  positive("checkpoints kept", static_cast<double>(t.keep_checkpoints));
}

nlohmann::json to_json(const Settings& s) {
  const auto& m = s.model;
  const auto& t = s.training;
  return {{"model",
           {{"vocabulary_size", m.vocabulary_size},
            {"embedding_size", m.embedding_size},
            {"hidden_size", m.hidden_size},
            {"norm", m.norm},
            {"tie_target_embeddings", m.tie_target_embeddings},
            {"init_center", m.init_center},
            {"dropout_embedding", m.dropout_embedding},
            {"dropout_hidden", m.dropout_hidden}}},
          {"training",
           {{"train_source", t.train_source},
            {"train_target", t.train_target},
            {"dev_source", t.dev_source},
            {"dev_target", t.dev_target},
            {"batch_sentences", t.batch_sentences},
            {"max_length", t.max_length},
            {"learning_rate", t.learning_rate},
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
    s.model.vocabulary_size = m.at("vocabulary_size").get<std::int64_t>();
    s.model.embedding_size = m.at("embedding_size").get<std::int64_t>();
    s.model.hidden_size = m.at("hidden_size").get<std::int64_t>();
    s.model.norm = m.at("norm").get<std::string>();
    s.model.tie_target_embeddings = m.at("tie_target_embeddings").get<bool>();
    s.model.init_center = m.at("init_center").get<double>();
    s.model.dropout_embedding = m.value("dropout_embedding", 0.0);
    s.model.dropout_hidden = m.value("dropout_hidden", 0.0);
    const auto& t = json.at("training");
    auto& r = s.training;
    r.train_source = t.at("train_source").get<std::string>();
    r.train_target = t.at("train_target").get<std::string>();
    r.dev_source = t.at("dev_source").get<std::string>();
    r.dev_target = t.at("dev_target").get<std::string>();
    r.batch_sentences = t.at("batch_sentences").get<std::int64_t>();
    r.max_length = t.at("max_length").get<std::int64_t>();
    r.learning_rate = t.at("learning_rate").get<double>();
    r.label_smoothing = t.at("label_smoothing").get<double>();
    r.clip_norm = t.at("clip_norm").get<double>();
    r.max_steps = t.at("max_steps").get<std::int64_t>();
    r.max_seconds = t.at("max_seconds").get<double>();
    r.dev_loss_every = t.at("dev_loss_every").get<std::int64_t>();
    r.dev_bleu_every = t.at("dev_bleu_every").get<std::int64_t>();
    r.dev_beam = t.at("dev_beam").get<std::int64_t>();
    r.patience = t.at("patience").get<std::int64_t>();
    r.checkpoint_every = t.at("checkpoint_every").get<std::int64_t>();
    r.keep_checkpoints = t.at("keep_checkpoints").get<std::int64_t>();
    r.seed = t.at("seed").get<std::uint64_t>();
    check(s);
    return s;
  } catch (const nlohmann::json::exception& error) {
    throw ng::Error(std::string("gru_nmt: ") + origin +
                    " is not a gru_nmt configuration: " + error.what());
  }
}

std::string describe(const Settings& settings) { return nmt::describe_config(to_json(settings)); }

}  // namespace gru_nmt
