#pragma once
// What the translation programs' command lines share besides `train` (train_command.h): the
// --device and --threads every subcommand takes, `translate` and `score` from a model folder,
// the flags of `experiment` and its end (CSV files, figures, report.md), and errors as
// messages. Each is written once for a Program (nmt/program.h).
//
//   CLI::App app{"gru_nmt: ..."};
//   nmt::CommandLine command_line(app, "gru_nmt");
//   nmt::TranslateCommand translate(app, 5, "Translations per sentence, ...");
//   ...parse...
//   return command_line.run([&](normgrad::Device device) {
//     if (translate.parsed()) return translate.run<gru_nmt::Program>(device);
//     ...
//   });

#include <normgrad/normgrad.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <iostream>
#include <ostream>
#include <string>
#include <vector>

#include "common/command_flags.h"
#include "common/run_folder.h"
#include "nmt/experiment_figures.h"
#include "nmt/experiment_report.h"
#include "nmt/experiment_runs.h"
#include "nmt/program.h"
#include "nmt/sentence_batches.h"
#include "text/text_file.h"

namespace nmt {

// --device and --threads, before or after the subcommand, and one subcommand required.
class CommandLine {
 public:
  CommandLine(CLI::App& app, std::string program);
  int threads() const { return threads_; }
  // Runs the parsed subcommand, `command`, on the device --device names with --threads
  // threads; an Error ends it with its message and status 1, on every rank of a distributed
  // job.
  int run(const std::function<int(normgrad::Device device)>& command) const;

 private:
  std::string program_, device_ = "cpu";
  int threads_ = 0;
};

// Standard input's lines, each checked as UTF-8 and stripped of its line end.
std::vector<std::string> read_stdin_lines();

// translate's output: the best translation a line when n_best is 1, else Moses's n-best form,
// "sentence number ||| translation ||| score", a line per hypothesis.
void write_translations(std::ostream& out, const std::vector<std::vector<Translation>>& lists,
                        std::int64_t n_best);

// score's output: "log-probability<TAB>tokens" a line per pair.
void write_scores(std::ostream& out, const std::vector<PairScore>& scores);

// `translate`: standard input's sentences to standard output, translated with a model folder's
// weights in batches.
struct TranslateCommand {
  // `beam`: the default beam; `n_best_help`: --n-best's description.
  TranslateCommand(CLI::App& app, std::int64_t beam, const std::string& n_best_help);
  bool parsed() const { return command->parsed(); }

  // With the program's search, or with `search(model, source, options)`.
  template <class Program, class Search>
  int run(normgrad::Device device, const Search& search) const {
    normgrad::Generator generator(0);
    auto loaded = load_model_folder(ProgramFolder<Program>(folder), generator, weights);
    if (!device.is_cpu()) loaded.model->to(device);
    const std::int64_t width = greedy ? 1 : beam;
    NG_CHECK(n_best <= width, std::string(Program::name) + " translate", "--n-best ", n_best,
             " is more than the beam ", width);
    std::vector<std::vector<std::int32_t>> sources;
    for (const auto& line : read_stdin_lines()) sources.push_back(loaded.tokenizer.encode(line));
    const auto options = Program::search_options(width, n_best);
    const BatchTranslator translator = [&](const SourceBatch& source) {
      return search(*loaded.model, source, options);
    };
    write_translations(
        std::cout, translate_n_best(translator, loaded.tokenizer, sources, batch, device), n_best);
    return 0;
  }
  template <class Program> int run(normgrad::Device device) const {
    return run<Program>(device, Program::translate_batch);
  }

  CLI::App* command;
  std::string folder, weights;  // weights: --weights, where the program has it
  std::int64_t beam, n_best = 1, batch = 32;
  bool greedy = false;
};

// `score`: the log-probability of each pair of two aligned files under a model folder's model.
struct ScoreCommand {
  explicit ScoreCommand(CLI::App& app);
  bool parsed() const { return command->parsed(); }

  template <class Program> int run(normgrad::Device device) const {
    normgrad::Generator generator(0);
    auto loaded = load_model_folder(ProgramFolder<Program>(folder), generator, weights);
    if (!device.is_cpu()) loaded.model->to(device);
    const TeacherForcedLogProbs log_probabilities = [&](const SourceBatch& s,
                                                        const TargetBatch& t) {
      return Program::log_probabilities(*loaded.model, s, t);
    };
    write_scores(std::cout, score_pairs(log_probabilities, loaded.tokenizer,
                                        normgrad::text::read_text_lines(source),
                                        normgrad::text::read_text_lines(target), 32, device,
                                        std::string(Program::name) + " score"));
    return 0;
  }

  CLI::App* command;
  std::string folder, source, target, weights;  // weights: --weights, where the program has it
};

// How a program describes the flags of its `experiment`.
struct ExperimentHelp {
  std::string command;               // the subcommand's
  std::string budget;                // the budgets and their times
  std::vector<std::string> budgets;  // their names (examples/common/budget.h)
  std::vector<std::string> presets;  // the presets --preset takes
  std::string preset, steps, norms;
};

// `experiment`'s flags that every program has: the corpus and the output folder, the budget,
// the preset, the precision, steps, test sentences, the norms and the beam.
template <class Options> struct ExperimentCommand {
  ExperimentCommand(CLI::App& app, const std::string& program, Options& options,
                    const ExperimentHelp& help)
      : command(app.add_subcommand("experiment", help.command)) {
    options.corpus = "out/corpus/debian-en-de";
    options.out = "out/" + program;
    command->add_option("--corpus", options.corpus,
                        "Folder with train, dev and test .en/.de (scripts/build_corpus)");
    command->add_option("--out", options.out,
                        "Where the runs, CSV files, figures and report.md go");
    command->add_option("--budget", budget, help.budget)->check(CLI::IsMember(help.budgets));
    command->add_option("--preset", preset, help.preset)->check(CLI::IsMember(help.presets));
    examples::precision_flag(command->add_option("--precision", precision));
    command->add_option("--steps", steps, help.steps)->check(CLI::PositiveNumber);
    command->add_option("--test-sentences", test_sentences, "Test lines to translate (0: all)")
        ->check(CLI::NonNegativeNumber);
    command->add_option("--norms", options.norms, help.norms)->delimiter(',');
    command->add_option("--beam", options.beam, "Beam for test BLEU")->check(CLI::Range(1, 1000));
  }
  bool parsed() const { return command->parsed(); }

  // `options` as the flags give them, with the preset's settings and the named budget, on
  // `device`, the runs' messages on stderr.
  void apply(Options& options, typename Options::Settings settings, ExperimentBudget named,
             normgrad::Device device) const {
    options.settings = std::move(settings);
    options.settings.model.precision = precision;
    options.budget = named;
    if (steps > 0) options.budget.steps = steps;
    if (test_sentences >= 0) options.budget.test_sentences = test_sentences;
    options.device = device;
    options.messages = &std::cerr;
  }

  CLI::App* command;
  std::string budget = "demo", preset = "small", precision = "float32";
  std::int64_t steps = 0, test_sentences = -1;
};

// Runs the experiment that `options` describe (its program's check_experiment, then
// run_experiment) and writes its CSV files (write_experiment_csv), its figures (figures_script)
// and report.md (report_markdown) into options.out: the functions of the options' namespace.
template <class Options> int run_experiment_command(const Options& options) {
  check_experiment(options);
  const std::string settings = describe(shared_run_settings(options));
  std::cerr << settings;
  const auto results = run_experiment(options);
  write_experiment_csv(options.out, results);
  const auto figures = examples::draw_figures(
      options.out, "figures.gp",
      [&](const std::string& terminal) { return figures_script(results, terminal); });
  if (!figures.message.empty()) std::cerr << figures.message << "\n";
  const ReportContext context{.date = examples::today_utc(),
                              .machine = machine_description(options.device),
                              .corpus = options.corpus,
                              .settings = settings,
                              .figures = figures.files};
  publish_report(options.out, report_markdown(results, context),
                 std::string(Options::Program::name) + " experiment");
  return 0;
}

}  // namespace nmt
