// The attentive_reader program as a user runs it: the tiny experiment on a corpus (the cloze task
// built, every norm trained, evaluated and reported), evaluation from the folder alone, timing,
// and the refusals before any work.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "helpers.h"
#include "profile_checks.h"
#include "run_program.h"
#include "scratch_folder.h"

#ifdef NORMGRAD_ATTENTIVE_READER_PROGRAM

using testing::check_refused;
using testing::run_program;
using testing::ScratchFolder;
namespace fs = std::filesystem;

namespace {

// Windows of 5 lines whose last shares a rare word with the 4 before it.
void write_corpus(const std::string& folder) {
  fs::create_directories(folder);
  std::ofstream en(folder + "/train.en");
  const char* things[] = {"printer", "scanner", "camera", "monitor", "speaker", "keyboard"};
  for (int window = 0; window < 400; ++window) {
    const std::string thing = things[window % 6];
    en << "The " << thing << " could not be found.\n"
       << "Select another device first.\n"
       << "Connection to the server failed.\n"
       << "Saving the document failed.\n"
       << "Please connect the " << thing << " again.\n";
  }
}

}  // namespace

TEST_CASE("attentive_reader runs its experiment on a corpus, evaluates and times") {
  ScratchFolder scratch("attentive_reader_cli");
  const std::string program = NORMGRAD_ATTENTIVE_READER_PROGRAM;
  write_corpus(scratch / "corpus");
  const std::string out = scratch / "experiment";
  const auto experiment = run_program(program + " experiment --budget tiny --corpus " +
                                      (scratch / "corpus") + " --out " + out + " --threads 1");
  INFO(experiment.output);
  REQUIRE(experiment.status == 0);
  for (const char* file : {"table6.csv", "curves.csv", "report.md", "rmsnorm/model.safetensors",
                           "batchnorm/train.csv", "none/vocabulary.txt", "data/questions/test"})
    CHECK(fs::exists(out + "/" + file));
  CHECK(experiment.output.find("| layernorm |") != std::string::npos);
  std::ifstream table(out + "/table6.csv");
  std::string line;
  int rows = -1;  // the header
  while (std::getline(table, line)) ++rows;
  CHECK(rows == 5);
  std::ifstream report_file(out + "/report.md");
  const std::string report((std::istreambuf_iterator<char>(report_file)), {});
  CHECK(report.find("Answering without reading, on the test questions: a guess") !=
        std::string::npos);
  // The budget times each norm's step after the runs (at small sizes when tiny).
  CHECK(report.find("## Table 6 at the paper's sizes") != std::string::npos);
  CHECK(report.find("; 1 rounds of 1 timed steps after 0 untimed, the norms taking turns.") !=
        std::string::npos);
  std::ifstream timed_table(out + "/table6_paper_sizes.csv");
  int timed_rows = -1;
  while (std::getline(timed_table, line)) ++timed_rows;
  CHECK(timed_rows == 5);

  // A run of its own on the experiment's questions, profiled.
  const std::string train = program + " train --data " + out + "/data --dim 8 --steps 4 " +
                            "--batch 8 --valid-every 4 --threads 1 --no-progress --out ";
  testing::check_profile_flag(train + (scratch / "profiled"), scratch.path.string(),
                              train + (scratch / "refused"), scratch / "refused");

  const auto evaluated =
      run_program(program + " evaluate --model " + out + "/layernorm --threads 1");
  INFO(evaluated.output);
  CHECK(evaluated.status == 0);
  CHECK(evaluated.output.find("test split: error") != std::string::npos);

  const auto changed = run_program(program + " train --out " + out + "/rmsnorm --dim 9");
  CHECK(changed.status == 1);
  CHECK(changed.output.find("holds a run with --dim 8, not 9") != std::string::npos);

  const auto timed =
      run_program(program + " time --dim 4 --batch 3 --vocabulary 600 --steps 1 " +
                  "--rounds 1 --warmup 0 --document-length 5 " +
                  "--max-document-length 9 --norms none batchnorm --out " + (scratch / "time"));
  INFO(timed.output);
  CHECK(timed.status == 0);
  CHECK(fs::exists(scratch / "time/table6.csv"));
}

TEST_CASE("attentive_reader refuses bad flags, specs, data and folders before any work") {
  ScratchFolder scratch("attentive_reader_cli_bad");
  const std::string program = NORMGRAD_ATTENTIVE_READER_PROGRAM;
  const auto refused = [&](const std::string& arguments, const char* message) {
    check_refused(program, arguments, message, scratch / "out");
  };
  const std::string out = " --out " + (scratch / "out");
  refused("train" + out, "--data is needed");
  refused("train" + out + " --data " + (scratch / "nowhere"), "is not a folder of .question");
  refused("train" + out + " --norm l2norm --data x", "the reader's LSTMs take");
  refused("train" + out + " --answers entities --data x", "--answers");
  refused("train" + out + " --dim 0 --data x", "--dim: must be a positive number");
  refused("train" + out + " --device cuda:7 --data x", "--device cuda:7");
  refused("prepare --corpus " + (scratch / "nowhere") + out, "lacks train.en");
  refused("experiment --budget huge --data x" + out, "--budget");
  refused("experiment" + out, "needs --data");
  refused("time --norms weightnorm" + out, "the reader's LSTMs take");
  refused("evaluate --model " + (scratch / "nowhere"), "no config.json");
  refused("translate", "subcommand");
}

#endif
