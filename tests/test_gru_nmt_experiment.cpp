// gru_nmt experiment: a whole small experiment on the fixture corpus (runs, test BLEU, the
// bootstrap, Table 5, Figure 4, continuing a finished experiment), its training logs, CSV
// files, gnuplot script and report, and its refusals.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/gnuplot.h"
#include "gru_nmt/experiment.h"
#include "gru_nmt/report.h"
#include "helpers.h"
#include "parallel_text_fixture.h"
#include "run_program.h"
#include "scratch_folder.h"

using namespace normgrad;
namespace fs = std::filesystem;
using testing::ScratchFolder;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::size_t count_lines(const std::string& path) {
  std::ifstream in(path);
  std::size_t lines = 0;
  for (std::string line; std::getline(in, line);) ++lines;
  return lines;
}

std::string fixture_corpus(const ScratchFolder& scratch) {
  return testing::corpus_folder(scratch / "corpus", "gru_nmt_experiment");
}

gru_nmt::ExperimentOptions tiny_experiment(const std::string& corpus, const std::string& out) {
  gru_nmt::ExperimentOptions options;
  options.corpus = corpus;
  options.out = out;
  options.budget = {.name = "test",
                    .steps = 4,
                    .figure4_steps = 2,
                    .dev_loss_every = 2,
                    .dev_bleu_every = 2,
                    .test_sentences = 10};
  options.settings = gru_nmt::preset("cpu");
  options.settings.model.vocabulary_size = 100;
  options.settings.model.embedding_size = 12;
  options.settings.model.hidden_size = 16;
  options.settings.training.batch_sentences = 16;
  options.settings.training.learning_rate = 0.005;
  options.norms = {"none", "layernorm", "rmsnorm"};
  options.beam = 2;
  return options;
}

gru_nmt::RunResult synthetic_run(const std::string& norm, double seconds_per_1000) {
  gru_nmt::RunResult run;
  run.label = norm;
  run.norm = norm;
  run.steps = 3;
  run.seconds_per_1000_steps = seconds_per_1000;
  run.test_bleu = 12.5;
  run.test_bleu_mean = 12.4;
  run.test_bleu_interval = 0.8;
  run.best_dev_bleu = 11.25;
  for (std::int64_t step = 1; step <= 3; ++step)
    run.log.push_back({.step = step,
                       .wall_seconds = 0.5 * static_cast<double>(step),
                       .train_token_loss = 9.0 - static_cast<double>(step),
                       .dev_token_loss = step == 3 ? 5.5 : -1,
                       .dev_bleu = step == 3 ? 11.25 : -1,
                       .step_seconds = seconds_per_1000 / 1000});
  return run;
}

}  // namespace

TEST_CASE(
    "gru_nmt experiment: every run trained, tested and analysed, and a finished one taken "
    "as it is") {
  ScratchFolder scratch("gru_nmt_experiment");
  const std::string corpus = fixture_corpus(scratch);
  const auto options = tiny_experiment(corpus, scratch / "out");
  const auto results = gru_nmt::run_experiment(options);

  REQUIRE(results.table2.size() == 3);
  CHECK(results.test_sentences == 10);
  for (const auto& run : results.table2) {
    INFO(run.norm);
    CHECK(run.steps == 4);
    CHECK(run.log.size() == 4);
    CHECK(run.seconds_per_1000_steps > 0);
    CHECK(run.parameters > 0);
    CHECK(run.test_bleu >= 0);
    CHECK(run.best_dev_bleu >= 0);  // measured at steps 2 and 4
    CHECK(count_lines(run.folder + "/test.hyp") == 10);
    CHECK(fs::exists(run.folder + "/best.safetensors"));
    CHECK(run.other_processes_cpu >= 0);  // measured on Linux, kept in experiment.json
    CHECK(run.other_processes_cpu <= 1);
  }
  // The norms add gains (and LayerNorm biases): more parameters than none, LayerNorm the most.
  CHECK(results.table2[1].parameters > results.table2[2].parameters);
  CHECK(results.table2[2].parameters > results.table2[0].parameters);
  // p-values against LayerNorm for the others, none for LayerNorm itself.
  CHECK(results.table2[0].p_against_layernorm > 0);
  CHECK(results.table2[1].p_against_layernorm < 0);
  CHECK(results.table2[2].p_against_layernorm > 0);

  REQUIRE(results.table5.size() == 3);
  CHECK(results.table5[0].norm == "none");
  CHECK(results.table5[0].statistics.deviation_all > 0);

  REQUIRE(results.figure4.size() == 2);
  CHECK(results.figure4[0].label == "layernorm, centre 0.2");
  CHECK(results.figure4[1].steps == 2);
  CHECK(fs::exists(scratch / "out/runs/rmsnorm-centre-0.2/config.json"));

  // Run again: the finished runs are taken as they are, with the same logs and test BLEU.
  const auto again = gru_nmt::run_experiment(options);
  REQUIRE(again.table2.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(again.table2[i].log.size() == 4);
    CHECK(again.table2[i].log.back().train_token_loss ==
          results.table2[i].log.back().train_token_loss);
    CHECK(again.table2[i].test_bleu == results.table2[i].test_bleu);
    CHECK(again.table2[i].other_processes_cpu == results.table2[i].other_processes_cpu);
  }
  // ... and a run of other settings in the same folder is refused.
  auto other = options;
  other.settings.training.learning_rate = 0.001;
  CHECK_ERROR(gru_nmt::run_experiment(other), "holds a run of other settings");
}

TEST_CASE("gru_nmt experiment refuses a missing corpus, an unknown norm and an empty budget") {
  ScratchFolder scratch("gru_nmt_experiment_bad");
  auto options = tiny_experiment(scratch / "nothing", scratch / "out");
  CHECK_ERROR(gru_nmt::check_experiment(options), "has no train.en", "scripts/build_corpus");
  const std::string corpus = fixture_corpus(scratch);
  options = tiny_experiment(corpus, scratch / "out");
  options.norms = {"layernorm", "groupnorm"};
  CHECK_ERROR(gru_nmt::check_experiment(options), "groupnorm");
  options = tiny_experiment(corpus, scratch / "out");
  options.budget.steps = 0;
  CHECK_ERROR(gru_nmt::check_experiment(options), "positive steps");
  CHECK_ERROR(gru_nmt::experiment_budget("huge"), "--budget must be", "huge");
  CHECK(gru_nmt::experiment_budget("demo").steps > 0);
  CHECK(gru_nmt::experiment_budget("long").steps > gru_nmt::experiment_budget("demo").steps);
  CHECK_FALSE(fs::exists(scratch / "out"));

  // What every run shares: the corpus by absolute path, the budget, no early stopping.
  options = tiny_experiment(corpus, scratch / "out");
  const auto shared = gru_nmt::shared_run_settings(options);
  CHECK(shared.model.norm == "per run: none, layernorm, rmsnorm");
  CHECK(shared.training.train_source == fs::absolute(corpus + "/train.en").string());
  CHECK(shared.training.max_steps == 4);
  CHECK(shared.training.patience == 0);
  CHECK(shared.training.dev_bleu_every == 2);
}

TEST_CASE("read_train_log reads train.csv's rows, empty cells as unmeasured, and refuses others") {
  ScratchFolder scratch("gru_nmt_train_log");
  fs::create_directories(scratch.path);
  const std::string header =
      "step,wall_seconds,train_loss,train_token_loss,dev_token_loss,dev_bleu,tokens_per_second,"
      "step_seconds\n";
  {
    std::ofstream out(scratch / "train.csv");
    out << header << "1,0.5,30.0,8.5,,,1000.0,0.25\n2,1.0,28.0,8.0,7.5,1.25,1100.0,0.20\n";
  }
  const auto rows = nmt::read_train_log(scratch / "train.csv", "gru_nmt");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].step == 1);
  CHECK(rows[0].dev_token_loss == -1);
  CHECK(rows[0].dev_bleu == -1);
  CHECK(rows[1].dev_token_loss == 7.5);
  CHECK(rows[1].dev_bleu == 1.25);
  CHECK(rows[1].step_seconds == 0.20);
  CHECK(rows[1].train_token_loss == 8.0);
  {
    std::ofstream out(scratch / "broken.csv");
    out << header << "1,0.5,30.0,eight,,,1000.0,0.25\n";
  }
  CHECK_ERROR(nmt::read_train_log(scratch / "broken.csv", "gru_nmt"), "line 2", "'eight'");
  {
    std::ofstream out(scratch / "short.csv");
    out << header << "1,0.5,30.0\n";
  }
  CHECK_ERROR(nmt::read_train_log(scratch / "short.csv", "gru_nmt"), "line 2", "3 fields");
  {
    std::ofstream out(scratch / "other.csv");
    out << "a,b\n1,2\n";
  }
  CHECK_ERROR(nmt::read_train_log(scratch / "other.csv", "gru_nmt"), "not a gru_nmt training log");
}

TEST_CASE("the experiment's speed-up, running mean, CSV files, figures script and report") {
  gru_nmt::ExperimentResults results;
  results.budget = {.name = "demo", .steps = 3, .figure4_steps = 3};
  results.table2 = {synthetic_run("none", 400), synthetic_run("layernorm", 800),
                    synthetic_run("rmsnorm", 600)};
  results.table2[2].p_against_layernorm = 0.25;
  results.table2[2].other_processes_cpu = 0.125;
  results.figure4 = {synthetic_run("layernorm", 800)};
  results.figure4[0].label = "layernorm, centre 0.2";
  results.table5 = {{"rmsnorm",
                     {.mean = {-0.5, -0.25, 0.125, 0.0},
                      .deviation = {1.5, 1.25, 1.0, 1.0},
                      .mean_all = -0.125,
                      .deviation_all = 1.125}}};
  results.test_sentences = 10;

  // (T_LN - T) / T_LN: RMSNorm at 600 against LayerNorm at 800 saves 25%.
  CHECK(*nmt::speedup_over_layernorm(results.table2, results.table2[2]) == doctest::Approx(25));
  CHECK(*nmt::speedup_over_layernorm(results.table2, results.table2[0]) == doctest::Approx(50));
  CHECK_FALSE(nmt::speedup_over_layernorm({results.table2[0]}, results.table2[0]).has_value());
  // The running mean of 2 over losses 8, 7, 6.
  CHECK(nmt::running_mean(results.table2[0].log, 2) == std::vector<double>{8.0, 7.5, 6.5});

  ScratchFolder scratch("gru_nmt_experiment_files");
  fs::create_directories(scratch.path);
  gru_nmt::write_experiment_csv(scratch.path.string(), results);
  const std::string table2 = read_file(scratch / "table2.csv");
  // The last column: whether the run learned (losses 8, 7, 6: its last tenth below its first).
  CHECK(
      table2.find("rmsnorm,rmsnorm,3,0,12.50,12.40,0.80,0.2500,11.25,600.0,0.0,25.0,0.125,yes\n") !=
      std::string::npos);
  CHECK(table2.find("\nlayernorm,layernorm,3,0,12.50,12.40,0.80,,11.25,800.0,0.0,0.0,,yes\n") !=
        std::string::npos);
  CHECK(read_file(scratch / "table5.csv") ==
        "norm,statistic,position_1,position_2,position_3,position_4,all\n"
        "rmsnorm,mean,-0.5000,-0.2500,0.1250,0.0000,-0.1250\n"
        "rmsnorm,deviation,1.5000,1.2500,1.0000,1.0000,1.1250\n");
  const std::string curves = read_file(scratch / "curves.csv");
  CHECK(count_lines(scratch / "curves.csv") == 1 + 4 * 3);
  CHECK(curves.find("1,2,rmsnorm,3,1.800,6.00000,7.00000,5.50000,11.25\n") != std::string::npos);
  CHECK(curves.find("4,3,\"layernorm, centre 0.2\",1,0.800,8.00000,8.00000,,\n") !=
        std::string::npos);

  // The script draws each Table 2 run on Figure 1's panels and the centred run on Figure 4's,
  // selecting runs by their index in curves.csv.
  const std::string script = gru_nmt::figures_script(results, "pngcairo").text;
  CHECK(gru_nmt::figures_script(results, "svg").files ==
        std::vector<std::string>{"figure1.svg", "figure4.svg"});
  CHECK(script.find("set output \"figure1.png\"") != std::string::npos);
  CHECK(script.find("set output \"figure4.png\"") != std::string::npos);
  CHECK(script.find("$2 == 2 ? $4 : NaN):($2 == 2 ? $7 : NaN) with lines lt 3 lw 1.5 title "
                    "\"rmsnorm\"") != std::string::npos);
  CHECK(script.find("($2 == 3 && valid(9) ? $4 : NaN)") != std::string::npos);
  if (examples::find_gnuplot_terminal()) {
    const auto drawn = examples::draw_figures(
        scratch.path.string(), "figures.gp",
        [&](const std::string& terminal) { return gru_nmt::figures_script(results, terminal); });
    INFO(drawn.message);
    REQUIRE(drawn.files.size() == 2);
    for (const auto& file : drawn.files) CHECK(fs::file_size(scratch.path / file) > 1000);
  } else {
    MESSAGE("gnuplot not found: the drawing itself is not tested");
  }

  const std::string report =
      gru_nmt::report_markdown(results, {.date = "2026-11-25",
                                         .machine = "test machine",
                                         .corpus = "corpus",
                                         .settings = "model:\n",
                                         .figures = {"figure1.png", "figure4.png"}});
  CHECK(report.find("| RMSNorm | 12.50 | 12.40 ± 0.80 | 0.2500 | 11.25 | 600.0 ± 0.0 | 25.0% | "
                    "12% | 22.4 | 501±11.8 s (24.7%) |") != std::string::npos);
  CHECK(report.find("| LayerNorm | 12.50 | 12.40 ± 0.80 | — | 11.25 | 800.0 ± 0.0 | — | — | 22.6 "
                    "|") != std::string::npos);
  CHECK(report.find("| RMSNorm | M | -0.50 | -0.25 | 0.12 | 0.00 | -0.12 | −0.40 |") !=
        std::string::npos);
  CHECK(report.find("![Figure 1](figure1.png)") != std::string::npos);
  CHECK(report.find("![Figure 4](figure4.png)") != std::string::npos);
  CHECK(report.find("| layernorm, centre 0.2 | 11.25 | 11.25 (step 3) |") != std::string::npos);
}

#ifdef NORMGRAD_GRU_NMT_PROGRAM
TEST_CASE("gru_nmt experiment as a program: a missing corpus or a bad budget ends with a message") {
  const std::string program = NORMGRAD_GRU_NMT_PROGRAM;
  const auto missing =
      testing::run_program(program + " experiment --corpus /nonexistent/corpus --out /tmp/x");
  CHECK(missing.status == 1);
  CHECK(missing.output.find("has no train.en") != std::string::npos);
  const auto budget = testing::run_program(program + " experiment --budget huge");
  CHECK(budget.status != 0);
  CHECK(budget.output.find("huge") != std::string::npos);
}
#endif
