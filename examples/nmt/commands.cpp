#include "nmt/commands.h"

#include <cstdio>
#include <iostream>

#include "common/device_flag.h"
#include "common/distributed_run.h"
#include "text/unicode_text.h"

namespace nmt {

namespace ng = normgrad;

CommandLine::CommandLine(CLI::App& app, std::string program) : program_(std::move(program)) {
  app.require_subcommand(1);
  app.fallthrough();  // --device and --threads may follow the subcommand
  app.add_option("--device", device_, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--threads", threads_, "CPU threads (default: all cores)")
      ->check(CLI::PositiveNumber);
}

int CommandLine::run(const std::function<int(ng::Device device)>& command) const {
  try {
    const ng::Device device = examples::parse_device(device_, program_);
    if (threads_ > 0) ng::set_num_threads(threads_);
    return command(device);
  } catch (const std::exception& error) {
    std::cerr << program_ << ": " << error.what() << "\n";
    return examples::end_job(1);
  }
}

std::vector<std::string> read_stdin_lines() {
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    ng::text::decode_utf8(line, "standard input line " + std::to_string(lines.size() + 1));
    lines.push_back(line);
  }
  return lines;
}

void write_translations(std::ostream& out, const std::vector<std::vector<Translation>>& lists,
                        std::int64_t n_best) {
  for (std::size_t i = 0; i < lists.size(); ++i) {
    if (n_best == 1) {
      out << lists[i].front().text << "\n";
      continue;
    }
    for (const auto& translation : lists[i])
      out << i << " ||| " << translation.text << " ||| " << translation.score << "\n";
  }
}

void write_scores(std::ostream& out, const std::vector<PairScore>& scores) {
  char line[64];
  for (const auto& score : scores) {
    std::snprintf(line, sizeof line, "%.6f\t%lld\n", score.log_probability,
                  static_cast<long long>(score.tokens));
    out << line;
  }
}

TranslateCommand::TranslateCommand(CLI::App& app, std::int64_t default_beam,
                                   const std::string& n_best_help)
    : command(
          app.add_subcommand("translate", "Translate stdin to stdout with a trained model folder")),
      beam(default_beam) {
  command->add_option("--model", folder, "A model folder written by train")->required();
  command->add_option("--beam", beam, "Beam width")->check(CLI::Range(1, 1000));
  command->add_option("--n-best", n_best, n_best_help)->check(CLI::Range(1, 1000));
  command->add_flag("--greedy", greedy, "Greedy search (a beam of 1)");
  command->add_option("--batch", batch, "Sentences per batch")->check(CLI::PositiveNumber);
}

ScoreCommand::ScoreCommand(CLI::App& app)
    : command(app.add_subcommand("score",
                                 "Log-probabilities of sentence pairs under a trained model")) {
  command->add_option("--model", folder, "A model folder written by train")->required();
  command->add_option("--source", source, "Source sentences")->required()->check(CLI::ExistingFile);
  command->add_option("--target", target, "Their translations, aligned")
      ->required()
      ->check(CLI::ExistingFile);
}

}  // namespace nmt
