#pragma once
// The training settings every translation example names alike: the corpus files, the longest
// pair, the learning rate, label smoothing and clipping, the budgets, the dev measurements,
// the training states and the seed. Their config.json fields and their checks are written once
// here, for any example's TrainingSettings with these members; each example adds its own (the
// batch size, the schedule).

#include <normgrad/normgrad.h>

#include <nlohmann/json.hpp>
#include <string>

namespace nmt {

// Calls visit(name, member) for every shared member of t (const or not), named as in
// config.json.
template <class Training, class Visit> void for_each_shared_setting(Training& t, Visit&& visit) {
  visit("train_source", t.train_source);
  visit("train_target", t.train_target);
  visit("dev_source", t.dev_source);
  visit("dev_target", t.dev_target);
  visit("max_length", t.max_length);
  visit("learning_rate", t.learning_rate);
  visit("label_smoothing", t.label_smoothing);
  visit("clip_norm", t.clip_norm);
  visit("max_steps", t.max_steps);
  visit("max_seconds", t.max_seconds);
  visit("dev_loss_every", t.dev_loss_every);
  visit("dev_bleu_every", t.dev_bleu_every);
  visit("dev_beam", t.dev_beam);
  visit("patience", t.patience);
  visit("checkpoint_every", t.checkpoint_every);
  visit("keep_checkpoints", t.keep_checkpoints);
  visit("seed", t.seed);
}

// The shared members of t as fields of the object `out`.
template <class Training> void write_shared_settings(const Training& t, nlohmann::json& out) {
  for_each_shared_setting(t, [&](const char* name, const auto& value) { out[name] = value; });
}

// The shared members of t from the object `in`: nlohmann::json's exception for a field that
// is missing or of another type.
template <class Training> void read_shared_settings(const nlohmann::json& in, Training& t) {
  for_each_shared_setting(t, [&](const char* name, auto& value) { in.at(name).get_to(value); });
}

// An Error naming the first shared value that cannot work, from `program`.
template <class Training>
void check_shared_settings(const Training& t, const std::string& program) {
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

}  // namespace nmt
