#pragma once
// The training settings every translation program names alike: the corpus files, the longest
// pair, the learning rate, label smoothing and clipping, the budgets, the dev measurements,
// the training states and the seed. Each program's TrainingSettings derives from these and adds
// its own (the batch size, the schedule); the defaults here are gru_nmt's, and transformer_nmt
// sets its own where they differ.
//
// And a program's config.json, written and read from one list of its settings: the program
// defines beside its Settings
//
//   template <class S, class Visit> void for_each_setting(S& settings, Visit&& visit);
//
// which calls visit(section, key, member) for every setting, and visit(section, key, member,
// added_later) for one that folders written before it existed lack.

#include <normgrad/normgrad.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace nmt {

struct TrainingSettings {
  std::string train_source, train_target;  // aligned text files
  std::string dev_source, dev_target;
  std::int64_t max_length = 80;  // subword tokens per side; longer training pairs are left out
  double learning_rate = 5e-4;   // Adam's (peak) learning rate
  double label_smoothing = 0.1;
  double clip_norm = 1.0;  // the global gradient norm's limit; 0: no clipping
  std::int64_t max_steps = 2000;
  double max_seconds = 0;  // wall-clock budget of this invocation; 0: none
  std::int64_t dev_loss_every = 200;
  std::int64_t dev_bleu_every = 1000;
  std::int64_t dev_beam = 1;   // 1: greedy search for dev BLEU
  std::int64_t patience = 10;  // dev BLEU evaluations without a new best before stopping; 0: never
  std::int64_t checkpoint_every = 500;
  std::int64_t keep_checkpoints = 2;
  std::uint64_t seed = 1;
};

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

// An Error naming the first shared value that cannot work, from `program`.
void check_shared_settings(const TrainingSettings& t, const std::string& program);

// What for_each_setting passes after the member of a setting that older folders lack.
struct AddedLater {};
inline constexpr AddedLater added_later{};

// The settings as config.json holds them (but for the tokenizer's fingerprint).
template <class Settings> nlohmann::json settings_json(const Settings& settings) {
  nlohmann::json json = nlohmann::json::object();
  for_each_setting(settings, [&](const char* section, const char* key, const auto& value,
                                 auto... /*added_later*/) { json[section][key] = value; });
  return json;
}

// The settings of a config.json's `json`, checked (`check` of the settings' namespace); a
// setting added later keeps its default where the file lacks it. An Error saying that `origin`
// is not a configuration of `program` when a setting is missing or of another type.
template <class Settings>
Settings read_settings(const nlohmann::json& json, const std::string& origin,
                       const std::string& program) {
  Settings settings;
  try {
    for_each_setting(settings,
                     [&](const char* section, const char* key, auto& value, auto... marks) {
                       const nlohmann::json& part = json.at(section);
                       if (sizeof...(marks) == 0 || part.contains(key)) part.at(key).get_to(value);
                     });
    check(settings);
  } catch (const nlohmann::json::exception& error) {
    throw normgrad::Error(program + ": " + origin + " is not a " + program +
                          " configuration: " + error.what());
  }
  return settings;
}

// A configuration's parts ("model", "training") as indented "key = value" lines, for the
// start of a run.
std::string describe_config(const nlohmann::json& config);

// The settings as describe_config prints them.
template <class Settings> std::string describe(const Settings& settings) {
  return describe_config(settings_json(settings));
}

}  // namespace nmt
