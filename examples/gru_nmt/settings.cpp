#include "settings.h"

#include <utility>

#include "common/precision.h"

namespace gru_nmt {

namespace ng = normgrad;

Settings preset(const std::string& name) {
  Settings settings;
  if (name == "cpu") {
    settings.model.embedding_size = 128;
    settings.model.hidden_size = 256;
    settings.model.vocabulary_size = 8000;
    settings.training.learning_rate = 5e-4;
  } else if (name == "tiny") {  // seconds a run: for checking a pipeline, not for learning
    settings.model.embedding_size = 12;
    settings.model.hidden_size = 16;
    settings.model.vocabulary_size = 100;
    settings.training.batch_sentences = 16;
    settings.training.learning_rate = 5e-3;
    settings.training.max_length = 50;
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
    throw ng::Error("gru_nmt: unknown preset '" + name + "'; expected tiny, cpu, small or paper");
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
  examples::activation_dtype(s.model.precision, s.model.dtype, "gru_nmt");
  positive("batch (sentences)", static_cast<double>(t.batch_sentences));
  nmt::check_shared_settings(t, "gru_nmt");
}

}  // namespace gru_nmt
