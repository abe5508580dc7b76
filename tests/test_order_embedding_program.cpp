// The order_embedding program as a user runs it: prepare a data set from a corpus, run the
// tiny experiment (every norm trained, evaluated and reported), continue a run, evaluate from the
// folder alone, time the norms, and the refusals before any work.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "common/gnuplot.h"
#include "helpers.h"
#include "run_program.h"
#include "scratch_folder.h"

#ifdef NORMGRAD_ORDER_EMBEDDING_PROGRAM

using testing::check_refused;
using testing::run_program;
using testing::ScratchFolder;
namespace fs = std::filesystem;

namespace {

// A corpus of 1300 pairs whose English and German sentences share numbers, so that the model
// has something to learn, in scripts/build_corpus's layout.
void write_corpus(const std::string& folder) {
  fs::create_directories(folder);
  std::ofstream en(folder + "/train.en"), de(folder + "/train.de");
  const char* things[] = {"file", "folder", "window", "printer", "disk"};
  const char* dinge[] = {"datei", "ordner", "fenster", "drucker", "platte"};
  for (int i = 0; i < 1300; ++i) {
    en << "open the " << things[i % 5] << " number " << i << " now\n";
    de << "öffne " << dinge[i % 5] << " nummer " << i << " jetzt\n";
  }
  for (const char* split : {"dev", "test"}) {
    std::ofstream(folder + "/" + split + ".en");
    std::ofstream(folder + "/" + split + ".de");
  }
}

}  // namespace

TEST_CASE("order_embedding prepares data, runs its experiment, continues and evaluates") {
  ScratchFolder scratch("order_embedding_cli");
  const std::string program = NORMGRAD_ORDER_EMBEDDING_PROGRAM;
  write_corpus(scratch / "corpus");
  const auto prepared =
      run_program(program + " prepare --corpus " + (scratch / "corpus") + " --out " +
                  (scratch / "data") + " --feature-dim 64 --dev-pairs 200 --test-pairs 400");
  INFO(prepared.output);
  REQUIRE(prepared.status == 0);
  CHECK(prepared.output.find("1300 segments, 1300 kept") != std::string::npos);
  CHECK(fs::exists(scratch / "data/images/hashed-bow/train.npy"));

  const std::string out = scratch / "experiment";
  const auto experiment = run_program(program + " experiment --budget tiny --data " +
                                      (scratch / "data") + " --out " + out + " --threads 1");
  INFO(experiment.output);
  REQUIRE(experiment.status == 0);
  for (const char* file : {"table7.csv", "curves.csv", "report.md", "rmsnorm/model.safetensors",
                           "prmsnorm-0.0625/train.csv", "none/vocabulary.txt"})
    CHECK(fs::exists(out + "/" + file));
  std::ifstream table(out + "/table7.csv");
  std::string header, line;
  std::getline(table, header);
  int rows = 0;
  while (std::getline(table, line)) ++rows;
  CHECK(rows == 4);
  // The budget times each norm's step after the runs (at small sizes when tiny).
  std::ifstream timed_table(out + "/table8_paper_sizes.csv");
  int timed_rows = -1;  // the header
  while (std::getline(timed_table, line)) ++timed_rows;
  CHECK(timed_rows == 4);
  std::ifstream report_file(out + "/report.md");
  const std::string report((std::istreambuf_iterator<char>(report_file)), {});
  CHECK(report.find("## Table 8 at the paper's sizes") != std::string::npos);
  if (examples::find_gnuplot_terminal()) {  // the figure was drawn and goes into the report
    CHECK(report.find("![dev image retrieval](validation.") != std::string::npos);
    CHECK(experiment.output.find("gnuplot failed") == std::string::npos);
  } else {
    MESSAGE("gnuplot not found: the drawing itself is not tested");
  }
  // A second run takes the finished runs as they are.
  const auto again = run_program(program + " experiment --budget tiny --data " +
                                 (scratch / "data") + " --out " + out + " --threads 1");
  CHECK(again.status == 0);
  CHECK(again.output.find("step     10/20") == std::string::npos);

  const auto evaluated =
      run_program(program + " evaluate --model " + out + "/rmsnorm --fold 200 --threads 1");
  INFO(evaluated.output);
  CHECK(evaluated.status == 0);
  CHECK(evaluated.output.find("test split, 2 folds of 200 images") != std::string::npos);

  const auto changed = run_program(program + " train --out " + out + "/rmsnorm --steps 30");
  CHECK(changed.status == 1);
  CHECK(changed.output.find("holds a run with --steps 20, not 30") != std::string::npos);

  const auto timed = run_program(program +
                                 " time --dim 8 --word-dim 4 --image-dim 16 --batch 4 "
                                 "--steps 2 --rounds 1 --warmup 0 --norms none rmsnorm --out " +
                                 (scratch / "time"));
  INFO(timed.output);
  CHECK(timed.status == 0);
  CHECK(fs::exists(scratch / "time/table8.csv"));
}

TEST_CASE("order_embedding refuses bad flags, specs, data and folders before any work") {
  ScratchFolder scratch("order_embedding_cli_bad");
  const std::string program = NORMGRAD_ORDER_EMBEDDING_PROGRAM;
  const auto refused = [&](const std::string& arguments, const char* message) {
    check_refused(program, arguments, message, scratch / "out");
  };
  const std::string out = " --out " + (scratch / "out");
  refused("train" + out, "--data is needed");
  refused("train" + out + " --data " + (scratch / "nowhere"), "has no images/ folder");
  refused("train" + out + " --norm batchnorm --data x", "the caption GRU takes");
  refused("train" + out + " --norm groupnorm --data x", "unknown normaliser 'groupnorm'");
  refused("train" + out + " --dim 0 --data x", "--dim: must be a positive number");
  refused("train" + out + " --device cuda:7 --data x", "--device cuda:7");
  refused("prepare --corpus " + (scratch / "nowhere") + out, "lacks train.en or train.de");
  refused("experiment --budget huge --data x" + out, "--budget");
  refused("time --norms weightnorm" + out, "the caption GRU takes");
  refused("evaluate --model " + (scratch / "nowhere"), "no config.json");
  refused("translate", "subcommand");
}

#endif
