#pragma once
// What the translation programs' `train` subcommands share: the model folder, the preset,
// --resume, the corpus files, the budgets, the training settings every example has
// (nmt/training_settings.h), --tokenizer, the progress bar and --distributed; flags that replace a
// preset's value only when given; and the run they start, checked before any work.
//
//   nmt::TrainCommand<Settings> train(app, "gru_nmt", {"cpu", "small", "paper"});
//   train.flags().add("--hidden", NMT_SETTING(model.hidden_size), "GRU state size");
//   ...parse...
//   if (train.parsed())
//     return train.run(train.settings(preset(train.preset())), device, gru_nmt::train);

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "nmt/training_run.h"

// A member of the settings, for SettingFlags::add: NMT_SETTING(training.learning_rate).
#define NMT_SETTING(part) \
  [](auto& s) -> auto& { return s.part; }

namespace nmt {

// Flags that replace a preset's value when given: each remembers how to copy its value from
// the parsed settings into the preset's.
template <class Settings> class SettingFlags {
 public:
  SettingFlags(CLI::App* command, Settings& parsed) : command_(command), parsed_(parsed) {}

  template <class Member>
  CLI::Option* add(const std::string& name, Member member, const std::string& help) {
    return remember(command_->add_option(name, member(parsed_), help), member);
  }

  // A flag (no value) that sets a bool member when given.
  template <class Member>
  CLI::Option* add_flag(const std::string& name, Member member, const std::string& help) {
    return remember(command_->add_flag(name, member(parsed_), help), member);
  }

  // The preset with every given flag's value.
  Settings applied_to(Settings settings) const {
    for (const auto& [option, copy] : copies_)
      if (option->count() > 0) copy(settings);
    return settings;
  }

 private:
  template <class Member> CLI::Option* remember(CLI::Option* option, Member member) {
    copies_.emplace_back(option, [member, &parsed = parsed_](Settings& settings) {
      member(settings) = member(parsed);
    });
    return option;
  }

  CLI::App* command_;
  Settings& parsed_;
  std::vector<std::pair<CLI::Option*, std::function<void(Settings&)>>> copies_;
};

template <class Settings> class TrainCommand {
 public:
  // Adds the subcommand `train` to `app` with the shared flags; `presets` are the names
  // --preset accepts, the first the default. The flags' values wait in settings of their own
  // until settings() applies them to a preset.
  TrainCommand(CLI::App& app, std::string program, const std::vector<std::string>& presets)
      : command_(
            app.add_subcommand("train", "Train a model into a model folder (or --resume one)")),
        program_(std::move(program)),
        preset_(presets.front()),
        flags_(command_, parsed_) {
    CLI::App* command = command_;
    std::string preset_help;
    for (const auto& name : presets) preset_help += (preset_help.empty() ? "" : ", ") + name;
    command->add_option("--model", options_.folder, "The model folder to create (or resume)")
        ->required();
    command->add_option("--preset", preset_, preset_help + " (default " + presets.front() + ")")
        ->check(CLI::IsMember(presets));
    command->add_flag("--resume", options_.resume,
                      "Continue the folder's run from its newest training state");
    flags_.add("--train-source", NMT_SETTING(training.train_source),
               "Training source text, one sentence a line");
    flags_.add("--train-target", NMT_SETTING(training.train_target),
               "Training target text, aligned");
    flags_.add("--dev-source", NMT_SETTING(training.dev_source),
               "Dev source text, for dev loss and BLEU");
    flags_.add("--dev-target", NMT_SETTING(training.dev_target),
               "Dev target text (the untouched reference)");
    command->add_option("--steps", steps_, "Training steps (the budget)")
        ->check(CLI::PositiveNumber);
    command->add_option("--seconds", seconds_, "Wall-clock budget of this run (0: none)")
        ->check(CLI::NonNegativeNumber);
    flags_.add("--max-length", NMT_SETTING(training.max_length),
               "Longest training pair, in subwords");
    flags_.add("--lr", NMT_SETTING(training.learning_rate), "Adam's (peak) learning rate");
    flags_.add("--label-smoothing", NMT_SETTING(training.label_smoothing), "Label smoothing");
    flags_.add("--clip-norm", NMT_SETTING(training.clip_norm),
               "Global gradient norm clip (0: none)");
    flags_.add("--dev-loss-every", NMT_SETTING(training.dev_loss_every),
               "Dev loss interval (steps)");
    flags_.add("--dev-bleu-every", NMT_SETTING(training.dev_bleu_every),
               "Dev BLEU interval (steps)");
    flags_.add("--dev-beam", NMT_SETTING(training.dev_beam), "Beam for dev BLEU (1: greedy)");
    flags_.add("--patience", NMT_SETTING(training.patience),
               "Dev BLEU evaluations without a new best before stopping (0: never)");
    flags_.add("--checkpoint-every", NMT_SETTING(training.checkpoint_every),
               "Training state interval");
    flags_.add("--keep-checkpoints", NMT_SETTING(training.keep_checkpoints),
               "Training states kept");
    flags_.add("--seed", NMT_SETTING(training.seed),
               "Seed of initialisation, dropout and batch order");
    command->add_option(
        "--tokenizer", options_.tokenizer,
        "A sentencepiece model to use instead of training one (e.g. from spm_train)");
    command->add_flag("--no-progress-bar", no_bar_, "Plain progress lines even on a terminal");
    examples::add_distributed_flag(command, distributed_);
    examples::add_profile_flags(command, options_.profile);
  }
  TrainCommand(const TrainCommand&) = delete;  // the flags hold references into it
  TrainCommand& operator=(const TrainCommand&) = delete;

  // For the example's own flags: those of its settings, and others on the subcommand.
  SettingFlags<Settings>& flags() { return flags_; }
  CLI::App* command() const { return command_; }
  bool parsed() const { return command_->parsed(); }
  const std::string& preset() const { return preset_; }

  // `preset` with every given flag (the corpus files among them) and the budgets.
  Settings settings(const Settings& preset) const {
    Settings settings = flags_.applied_to(preset);
    auto& t = settings.training;
    if (steps_ > 0) t.max_steps = steps_;
    if (seconds_ >= 0) t.max_seconds = seconds_;
    return settings;
  }

  // Trains with `train` (the example's) on `settings`: a new run must name the four corpus
  // files and pass the example's `check`, and its settings are printed first; a resumed run
  // takes the folder's settings with --steps and --seconds. Prints the best dev BLEU at the
  // end; returns the exit status. With --distributed, this process is one rank of the job
  // mpirun started (`threads`: the --threads given, 0 for none).
  template <class Train>
  int run(const Settings& settings, const normgrad::Device& device, Train&& train,
          int threads = 0) const {
    const examples::DistributedRun job = examples::join_job(distributed_, threads, program_);
    if (!options_.resume) {
      const auto& t = settings.training;
      NG_CHECK(!t.train_source.empty() && !t.train_target.empty() && !t.dev_source.empty() &&
                   !t.dev_target.empty(),
               program_ + " train",
               "a new model needs --train-source, --train-target, --dev-source and --dev-target");
      check(settings);
      if (job.writes()) std::cerr << describe(settings);
    }
    TrainOptions<Settings> options = options_;
    options.settings = settings;
    options.resume_max_steps = steps_;
    options.resume_max_seconds = seconds_;
    options.device = examples::device_for_rank(device, job);
    options.progress_bar = !no_bar_ && isatty(STDERR_FILENO);
    options.messages = job.writes() ? &std::cerr : nullptr;
    options.job = job;
    if (!job.writes()) options.profile = {};  // rank 0 profiles
    const TrainSummary summary = train(options);
    if (job.writes())
      std::cerr << "best dev BLEU: "
                << (summary.best_bleu < 0 ? std::string("not measured")
                                          : std::to_string(summary.best_bleu))
                << "\n";
    return 0;
  }

 private:
  CLI::App* command_;
  std::string program_, preset_;
  Settings parsed_{};
  SettingFlags<Settings> flags_;
  TrainOptions<Settings> options_{};
  std::int64_t steps_ = 0;
  double seconds_ = -1;
  bool no_bar_ = false;
  bool distributed_ = false;
};

}  // namespace nmt
