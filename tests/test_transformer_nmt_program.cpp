// transformer_nmt as a program: training into a model folder, exact resume, checkpoint
// averaging, translate and score from the folder alone, the experiment with its report, and
// refusals of bad flags, folders and budgets.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "common/run_folder.h"
#include "helpers.h"
#include "nmt/train_log.h"
#include "nmt_program_checks.h"
#include "parallel_text_fixture.h"
#include "run_program.h"
#include "scratch_folder.h"
#include "text/text_file.h"
#include "transformer_nmt/experiment.h"
#include "transformer_nmt/program.h"
#include "transformer_nmt/report.h"

using namespace normgrad;
namespace fs = std::filesystem;

namespace {

using testing::run_program;
using testing::ScratchFolder;

transformer_nmt::Settings tiny_settings(const testing::ParallelCorpusFiles& train,
                                        const testing::ParallelCorpusFiles& dev) {
  transformer_nmt::Settings settings = transformer_nmt::preset("cpu");
  auto& m = settings.model;
  m.vocabulary_size = 100;
  m.model_size = 16;
  m.feed_forward_size = 32;
  m.heads = 2;
  m.encoder_layers = m.decoder_layers = 1;
  m.norm = "rmsnorm";
  auto& t = settings.training;
  testing::use_tiny_run(t, train, dev);
  t.batch_tokens = 200;
  t.warmup_steps = 4;
  t.learning_rate = 3e-3;
  return settings;
}

transformer_nmt::ExperimentOptions tiny_experiment(const std::string& corpus,
                                                   const std::string& out) {
  const testing::ParallelCorpusFiles none{};
  transformer_nmt::ExperimentOptions options;
  options.corpus = corpus;
  options.out = out;
  options.budget = {
      .name = "test", .steps = 4, .dev_loss_every = 2, .dev_bleu_every = 2, .test_sentences = 8};
  options.settings = tiny_settings(none, none);
  options.norms = {"none", "layernorm", "rmsnorm"};
  options.pre_norms = {"layernorm"};
  options.beam = 2;
  return options;
}

std::size_t line_count(const std::string& path) { return text::read_text_lines(path).size(); }

}  // namespace

TEST_CASE("transformer_nmt train: a resumed run takes exactly the steps of an uninterrupted one") {
  const auto train = testing::small_parallel_corpus("transformer_nmt_resume_train", 240);
  const auto dev = testing::small_parallel_corpus("transformer_nmt_resume_dev", 20);
  ScratchFolder scratch("transformer_nmt_resume");
  // Dropout draws from the run's generator: resume must restore it, and the schedule's step.
  const auto settings = tiny_settings(train, dev);
  REQUIRE(settings.model.dropout > 0);
  const auto whole = transformer_nmt::train({.folder = scratch / "whole", .settings = settings});
  REQUIRE(whole.losses.size() == 8);
  CHECK(whole.best_bleu >= 0);

  auto half_settings = settings;
  half_settings.training.max_steps = 6;  // stops between two training states
  const auto half =
      transformer_nmt::train({.folder = scratch / "split", .settings = half_settings});
  CHECK(half.last_step == 6);
  const auto rest =
      transformer_nmt::train({.folder = scratch / "split", .resume = true, .resume_max_steps = 8});
  CHECK(rest.first_step == 6);
  REQUIRE(rest.losses.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) CHECK(rest.losses[i] == whole.losses[6 + i]);  // bit for bit
  for (std::size_t i = 0; i < 6; ++i) CHECK(half.losses[i] == whole.losses[i]);

  const transformer_nmt::ModelFolder folder(scratch / "split");
  CHECK(folder.checkpoint_steps() == std::vector<std::int64_t>{4, 6, 8});
  // The log has one row per step, with the schedule's rate: warm-up to 3e-3 at step 4.
  const auto log = nmt::read_train_log(scratch / "split/train.csv", "test");
  REQUIRE(log.size() == 8);
  CHECK(log[3].learning_rate == doctest::Approx(3e-3));
  CHECK(log[0].learning_rate == doctest::Approx(7.5e-4));

  // Averaging the last two training states: the mean of their model tensors, loadable alone.
  const auto steps = transformer_nmt::average_checkpoints(folder, 2, "averaged.safetensors");
  CHECK(steps == std::vector<std::int64_t>{6, 8});
  Generator generator(0);
  const auto averaged =
      transformer_nmt::load_model_folder(folder, generator, "averaged.safetensors");
  CHECK(averaged.weights == folder.file("averaged.safetensors"));
  CHECK_ERROR(transformer_nmt::average_checkpoints(folder, 4, "x.safetensors"),
              "holds 3 training states, fewer than --last 4");
  CHECK_ERROR(transformer_nmt::load_model_folder(folder, generator, "missing.safetensors"),
              "missing.safetensors", "no such file");
}

TEST_CASE("transformer_nmt train refuses bad settings and folders before any training") {
  const auto train = testing::small_parallel_corpus("transformer_nmt_refuse_train", 60);
  const auto dev = testing::small_parallel_corpus("transformer_nmt_refuse_dev", 10);
  ScratchFolder scratch("transformer_nmt_refuse");
  auto settings = tiny_settings(train, dev);
  settings.model.norm = "batchnorm";
  CHECK_ERROR(transformer_nmt::train({.folder = scratch / "a", .settings = settings}),
              "has no place in a Transformer");
  settings = tiny_settings(train, dev);
  settings.model.heads = 3;
  CHECK_ERROR(transformer_nmt::train({.folder = scratch / "a", .settings = settings}),
              "not divisible by 3 heads");
  settings = tiny_settings(train, dev);
  settings.training.batch_tokens = 50;
  settings.training.max_length = 80;
  CHECK_ERROR(transformer_nmt::train({.folder = scratch / "a", .settings = settings}),
              "cannot hold a pair");
  settings = tiny_settings(train, dev);
  settings.training.dev_target = scratch / "missing.de";
  CHECK_ERROR(transformer_nmt::train({.folder = scratch / "a", .settings = settings}),
              "cannot read", "missing.de");
  CHECK_FALSE(fs::exists(scratch / "a"));
  CHECK_ERROR(transformer_nmt::train({.folder = scratch / "none", .resume = true}),
              "holds no model to resume");
  // A folder of another program is not a transformer_nmt configuration.
  fs::create_directories(scratch / "other");
  std::ofstream(scratch / "other/config.json")
      << R"({"model": {"hidden_size": 16}, "tokenizer": "0"})";
  Generator generator(0);
  CHECK_ERROR(transformer_nmt::load_model_folder(transformer_nmt::ModelFolder(scratch / "other"),
                                                 generator),
              "not a transformer_nmt configuration");
}

TEST_CASE(
    "transformer_nmt experiment: post- and pre-norm runs trained, tested and compared, and "
    "a finished experiment taken as it is") {
  ScratchFolder scratch("transformer_nmt_experiment");
  const std::string corpus =
      testing::corpus_folder(scratch / "corpus", "transformer_nmt_experiment");
  const auto options = tiny_experiment(corpus, scratch / "out");
  const auto results = transformer_nmt::run_experiment(options);

  REQUIRE(results.table4.size() == 3);
  REQUIRE(results.pre_norm.size() == 1);
  CHECK(results.test_sentences == 8);
  for (const auto* runs : {&results.table4, &results.pre_norm}) {
    for (const auto& run : *runs) {
      INFO(run.label);
      CHECK(run.steps == 4);
      CHECK(run.log.size() == 4);
      CHECK(run.seconds_per_1000_steps > 0);
      CHECK(run.test_bleu >= 0);
      CHECK(run.best_dev_bleu >= 0);  // measured at steps 2 and 4
      CHECK(line_count(run.folder + "/test.hyp") == 8);
      CHECK(fs::exists(run.folder + "/best.safetensors"));
    }
  }
  // LayerNorm's gains and biases, RMSNorm's gains alone, none's nothing.
  CHECK(results.table4[1].parameters > results.table4[2].parameters);
  CHECK(results.table4[2].parameters > results.table4[0].parameters);
  CHECK(results.table4[0].p_against_layernorm > 0);
  CHECK(results.table4[1].p_against_layernorm < 0);
  // The pre-norm runs are compared among themselves: LayerNorm is their baseline.
  CHECK(results.pre_norm[0].label == "layernorm, pre-norm");
  CHECK(results.pre_norm[0].p_against_layernorm < 0);
  CHECK(results.pre_norm[0].folder == (scratch / "out/runs/layernorm-pre-norm"));
  const auto pre = transformer_nmt::ModelFolder(results.pre_norm[0].folder).read_config(nullptr);
  CHECK(pre.model.pre_norm);
  CHECK(pre.model.norm == "layernorm");
  // Four steps: the warm-up is cut to a quarter of them.
  CHECK(pre.training.warmup_steps == 1);
  CHECK(pre.training.patience == 0);

  // What the program writes from the results.
  transformer_nmt::write_experiment_csv(scratch / "out", results);
  CHECK(line_count(scratch / "out/table4.csv") == 4);
  CHECK(line_count(scratch / "out/pre_norm.csv") == 2);
  CHECK(line_count(scratch / "out/curves.csv") == 1 + 4 * 4);
  const auto script = transformer_nmt::figures_script(results, "pngcairo");
  CHECK(script.files == std::vector<std::string>{"post_norm.png", "pre_norm.png"});
  CHECK(script.text.find("set output \"pre_norm.png\"") != std::string::npos);
  CHECK(script.text.find("($2 == 3 ? $4 : NaN):($2 == 3 ? $7 : NaN)") != std::string::npos);
  const std::string report =
      transformer_nmt::report_markdown(results, {.date = "2026-11-26",
                                                 .machine = "test",
                                                 .corpus = "corpus",
                                                 .settings = "x\n",
                                                 .figures = {"post_norm.png", "pre_norm.png"}});
  CHECK(report.find("| Baseline (none) | ") != std::string::npos);
  CHECK(report.find("| 26.6 | 248±1.31 s |") != std::string::npos);  // the paper's LayerNorm
  CHECK(report.find("## Pre-norm") != std::string::npos);
  CHECK(report.find("| LayerNorm, pre-norm | ") != std::string::npos);
  CHECK(report.find("![pre-norm training curves](pre_norm.png)") != std::string::npos);

  // Run again: the finished runs are taken as they are.
  const auto again = transformer_nmt::run_experiment(options);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(again.table4[i].log.back().train_token_loss ==
          results.table4[i].log.back().train_token_loss);
    CHECK(again.table4[i].test_bleu == results.table4[i].test_bleu);
  }
  // ... and a folder holding a run of other settings is refused.
  auto other = options;
  other.settings.training.learning_rate = 1e-4;
  CHECK_ERROR(transformer_nmt::run_experiment(other), "holds a run of other settings");
}

TEST_CASE("transformer_nmt experiment refuses a missing corpus, a bad norm and an empty budget") {
  ScratchFolder scratch("transformer_nmt_experiment_bad");
  auto options = tiny_experiment(scratch / "nothing", scratch / "out");
  CHECK_ERROR(transformer_nmt::check_experiment(options), "has no train.en",
              "scripts/build_corpus");
  const std::string corpus =
      testing::corpus_folder(scratch / "corpus", "transformer_nmt_experiment_bad");
  options = tiny_experiment(corpus, scratch / "out");
  options.pre_norms = {"batchnorm"};
  CHECK_ERROR(transformer_nmt::check_experiment(options), "batchnorm");
  options = tiny_experiment(corpus, scratch / "out");
  options.budget.dev_bleu_every = 0;
  CHECK_ERROR(transformer_nmt::check_experiment(options), "positive steps and intervals");
  options = tiny_experiment(corpus, scratch / "out");
  options.norms.clear();
  CHECK_ERROR(transformer_nmt::check_experiment(options), "no norms");
  CHECK_ERROR(transformer_nmt::experiment_budget("huge"), "--budget must be", "huge");
  CHECK(transformer_nmt::experiment_budget("long").steps >
        transformer_nmt::experiment_budget("demo").steps);
  CHECK_FALSE(fs::exists(scratch / "out"));
}

TEST_CASE("an experiment's run trained, diverged or did not learn, and its name in the report") {
  nmt::RunResult run;
  run.norm = "prmsnorm:0.0625";
  run.label = "prmsnorm:0.0625, pre-norm";
  CHECK(nmt::run_name(run) == "pRMSNorm (prmsnorm:0.0625), pre-norm");
  CHECK(examples::run_folder_name(run.label) == "prmsnorm-0.0625-pre-norm");
  for (std::int64_t step = 1; step <= 20; ++step)
    run.log.push_back({.step = step, .train_token_loss = 8.0 - 0.2 * static_cast<double>(step)});
  CHECK(nmt::training_failure(run).empty());  // 7.8 at first, 4.0 at the end
  CHECK(nmt::final_loss(run) == doctest::Approx(4.1));
  for (auto& row : run.log) row.train_token_loss = 8.0 - 0.01 * static_cast<double>(row.step);
  CHECK(nmt::training_failure(run) == "did not learn");
  run.log[12].train_token_loss = std::nan("");
  CHECK(nmt::training_failure(run) == "diverged at step 13");
  run.log[12].train_token_loss = HUGE_VAL;
  CHECK(nmt::training_failure(run) == "diverged at step 13");
}

#ifdef NORMGRAD_TRANSFORMER_NMT_PROGRAM

TEST_CASE("transformer_nmt translate, score and average work from the model folder alone") {
  const auto train = testing::small_parallel_corpus("transformer_nmt_cli_train", 120);
  const auto dev = testing::small_parallel_corpus("transformer_nmt_cli_dev", 10);
  ScratchFolder scratch("transformer_nmt_cli");
  const std::string program = NORMGRAD_TRANSFORMER_NMT_PROGRAM;
  const std::string folder = scratch / "model";
  const auto trained = run_program(
      program + " train --model " + folder + " --train-source " + train.source +
      " --train-target " + train.target + " --dev-source " + dev.source + " --dev-target " +
      dev.target +
      " --vocabulary 100 --model-size 16 --feed-forward 32 --heads 2 --encoder-layers 1"
      " --decoder-layers 1 --placement pre --batch-tokens 200 --steps 4 --dev-bleu-every 4"
      " --dev-loss-every 2 --checkpoint-every 2 --threads 1 --no-progress-bar");
  INFO(trained.output);
  REQUIRE(trained.status == 0);
  CHECK(trained.output.find("stopped at step 4 by the step budget") != std::string::npos);
  CHECK(trained.output.find("pre_norm = true") != std::string::npos);

  std::ofstream(scratch / "input.en")
      << "the file could not be opened\n\nthe new window was closed\n";
  const auto translate = [&](const std::string& flags) {
    return run_program(program + " translate --model " + folder + " " + flags + " < " +
                       (scratch / "input.en"));
  };
  const auto cached = translate("--beam 3");
  INFO(cached.output);
  CHECK(cached.status == 0);
  CHECK(std::count(cached.output.begin(), cached.output.end(), '\n') == 3);
  CHECK(translate("--beam 3 --uncached").output == cached.output);
  const auto n_best = translate("--beam 3 --n-best 2");
  CHECK(n_best.status == 0);
  CHECK(n_best.output.find("0 ||| ") == 0);
  const auto too_many = translate("--beam 2 --n-best 3");
  CHECK(too_many.status == 1);
  CHECK(too_many.output.find("more than the beam") != std::string::npos);

  const auto averaged = run_program(program + " average --model " + folder + " --last 2");
  INFO(averaged.output);
  CHECK(averaged.status == 0);
  CHECK(fs::exists(folder + "/averaged.safetensors"));
  CHECK(translate("--weights averaged.safetensors").status == 0);
  const auto too_few = run_program(program + " average --model " + folder + " --last 9");
  CHECK(too_few.status == 1);
  CHECK(too_few.output.find("fewer than --last 9") != std::string::npos);

  std::ofstream(scratch / "pair.en") << "the file\n";
  std::ofstream(scratch / "pair.de") << "die Datei\n";
  const auto scored = run_program(program + " score --model " + folder + " --source " +
                                  (scratch / "pair.en") + " --target " + (scratch / "pair.de"));
  CHECK(scored.status == 0);
  CHECK(scored.output.find('\t') != std::string::npos);
  CHECK(std::stod(scored.output) < 0);

  const auto no_folder =
      run_program(program + " translate --model " + (scratch / "missing") + " < /dev/null");
  CHECK(no_folder.status == 1);
  CHECK(no_folder.output.find("is not a transformer_nmt model folder") != std::string::npos);
  CHECK(run_program(program + " train --model " + (scratch / "x") + " --preset huge").status != 0);
  CHECK(run_program(program + " train --model " + (scratch / "x") + " --placement middle").status !=
        0);
  const auto missing_data = run_program(program + " train --model " + (scratch / "y"));
  CHECK(missing_data.status == 1);
  CHECK(missing_data.output.find("needs --train-source") != std::string::npos);

  const auto no_corpus = run_program(program + " experiment --corpus " + (scratch / "none") +
                                     " --out " + (scratch / "experiment"));
  CHECK(no_corpus.status == 1);
  CHECK(no_corpus.output.find("has no train.en") != std::string::npos);
  CHECK_FALSE(fs::exists(scratch / "experiment"));
  CHECK(run_program(program + " experiment --budget huge").status != 0);
  const std::string corpus = testing::corpus_folder(scratch / "corpus", "transformer_nmt_cli");
  const auto bad_norm =
      run_program(program + " experiment --norms layernorm,groupnorm --corpus " + corpus);
  CHECK(bad_norm.status == 1);
  CHECK(bad_norm.output.find("groupnorm") != std::string::npos);
}

TEST_CASE("transformer_nmt trains, translates and scores in mixed precision") {
  testing::check_mixed_precision_program(NORMGRAD_TRANSFORMER_NMT_PROGRAM, "transformer_nmt_bf16");
}

#endif
