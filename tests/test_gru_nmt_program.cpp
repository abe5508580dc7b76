// gru_nmt as a program: training into a model folder, exact resume, translate and score from
// the folder alone, and refusals of bad flags, data and folders.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "gru_nmt/program.h"
#include "helpers.h"
#include "nmt_program_checks.h"
#include "parallel_text_fixture.h"
#include "profile_checks.h"
#include "run_program.h"
#include "scratch_folder.h"
#include "text/text_file.h"

using namespace normgrad;
namespace fs = std::filesystem;

namespace {

using testing::run_program;
using testing::ScratchFolder;

gru_nmt::Settings tiny_settings(const testing::ParallelCorpusFiles& train,
                                const testing::ParallelCorpusFiles& dev) {
  gru_nmt::Settings settings = gru_nmt::preset("cpu");
  settings.model.vocabulary_size = 100;
  settings.model.embedding_size = 12;
  settings.model.hidden_size = 16;
  settings.model.norm = "rmsnorm";
  auto& t = settings.training;
  testing::use_tiny_run(t, train, dev);
  t.batch_sentences = 16;
  t.learning_rate = 0.005;
  return settings;
}

}  // namespace

TEST_CASE("gru_nmt train: a resumed run takes exactly the steps of an uninterrupted one") {
  const auto train = testing::small_parallel_corpus("gru_nmt_resume_train", 240);
  const auto dev = testing::small_parallel_corpus("gru_nmt_resume_dev", 30);
  ScratchFolder scratch("gru_nmt_resume");
  // With dropout, whose masks come from the run's generator: resume must restore it too.
  auto settings = tiny_settings(train, dev);
  settings.model.dropout_embedding = 0.1;
  settings.model.dropout_hidden = 0.2;

  const auto whole = gru_nmt::train({.folder = scratch / "whole", .settings = settings});
  REQUIRE(whole.losses.size() == 8);
  CHECK(whole.last_step == 8);
  CHECK(whole.stopped_because == "the step budget");
  CHECK(whole.best_bleu >= 0);

  auto half_settings = settings;
  half_settings.training.max_steps = 5;  // stops between two training states: resume goes back to 4
  const auto half = gru_nmt::train({.folder = scratch / "split", .settings = half_settings});
  CHECK(half.last_step == 5);
  const auto rest =
      gru_nmt::train({.folder = scratch / "split", .resume = true, .resume_max_steps = 8});
  CHECK(rest.first_step == 5);
  REQUIRE(rest.losses.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) CHECK(rest.losses[i] == whole.losses[5 + i]);  // bit for bit
  for (std::size_t i = 0; i < 5; ++i) CHECK(half.losses[i] == whole.losses[i]);

  // The folder holds what translate needs, and its log one row per step.
  const gru_nmt::ModelFolder folder(scratch / "split");
  CHECK(folder.checkpoint_steps() == std::vector<std::int64_t>{5, 8});
  std::ifstream log(scratch / "split/train.csv");
  std::string line;
  std::int64_t rows = -1;
  while (std::getline(log, line)) ++rows;
  CHECK(rows == 8);
  Generator generator(0);
  const auto loaded = gru_nmt::load_model_folder(folder, generator);
  CHECK(loaded.settings.model.hidden_size == 16);
  CHECK(loaded.settings.model.dropout_hidden == 0.2);
  CHECK(loaded.weights == scratch / "split/best.safetensors");
}

TEST_CASE(
    "gru_nmt train refuses a misaligned corpus, an existing folder and a bad norm before "
    "training") {
  const auto train = testing::small_parallel_corpus("gru_nmt_bad_train", 60);
  const auto dev = testing::small_parallel_corpus("gru_nmt_bad_dev", 10);
  ScratchFolder scratch("gru_nmt_bad");
  auto settings = tiny_settings(train, dev);
  settings.training.train_target = dev.target;  // 10 lines against 60
  CHECK_ERROR(gru_nmt::train({.folder = scratch / "a", .settings = settings}), "has 60 lines but",
              "has 10");
  CHECK_FALSE(fs::exists(scratch / "a/config.json"));

  settings = tiny_settings(train, dev);
  settings.model.norm = "groupnorm";
  CHECK_ERROR(gru_nmt::train({.folder = scratch / "b", .settings = settings}), "groupnorm");
  settings.model.norm = "batchnorm";
  CHECK_ERROR(gru_nmt::train({.folder = scratch / "b", .settings = settings}),
              "no place in a recurrent model");
  settings = tiny_settings(train, dev);
  settings.model.dropout_hidden = 1.0;
  CHECK_ERROR(gru_nmt::train({.folder = scratch / "b", .settings = settings}), "hidden dropout",
              "[0, 1)", "1");
  settings = tiny_settings(train, dev);
  settings.training.max_steps = 0;
  CHECK_ERROR(gru_nmt::train({.folder = scratch / "b", .settings = settings}),
              "steps must be positive");
  settings = tiny_settings(train, dev);
  settings.training.dev_source = "/nonexistent/dev.en";
  CHECK_ERROR(gru_nmt::train({.folder = scratch / "b", .settings = settings}),
              "/nonexistent/dev.en");

  settings = tiny_settings(train, dev);
  settings.training.max_steps = 1;
  gru_nmt::train({.folder = scratch / "c", .settings = settings});
  CHECK_ERROR(gru_nmt::train({.folder = scratch / "c", .settings = settings}),
              "already holds a model", "--resume");
  CHECK_ERROR(gru_nmt::train({.folder = scratch / "none", .resume = true}),
              "holds no model to resume");

  // A tokenizer that is not the folder's.
  const auto other = text::SubwordTokenizer::train({train.source}, {.vocabulary_size = 90});
  other.save(scratch / "c/tokenizer.model");
  Generator generator(0);
  CHECK_ERROR(gru_nmt::load_model_folder(gru_nmt::ModelFolder(scratch / "c"), generator),
              "is not the one");
}

#ifdef NORMGRAD_GRU_NMT_PROGRAM

TEST_CASE("gru_nmt translate and score work from the model folder alone, line for line") {
  const auto train = testing::small_parallel_corpus("gru_nmt_cli_train", 120);
  const auto dev = testing::small_parallel_corpus("gru_nmt_cli_dev", 10);
  ScratchFolder scratch("gru_nmt_cli");
  const std::string program = NORMGRAD_GRU_NMT_PROGRAM;
  const std::string folder = scratch / "model";
  const auto trained =
      run_program(program + " train --model " + folder + " --train-source " + train.source +
                  " --train-target " + train.target + " --dev-source " + dev.source +
                  " --dev-target " + dev.target +
                  " --vocabulary 100 --embedding 12 --hidden 16 --steps 4 --dev-bleu-every 4"
                  " --dev-loss-every 2 --checkpoint-every 2 --threads 1 --no-progress-bar");
  INFO(trained.output);
  REQUIRE(trained.status == 0);
  CHECK(trained.output.find("stopped at step 4 by the step budget") != std::string::npos);

  std::ofstream(scratch / "input.en")
      << "the file could not be opened\n\nthe new window was closed\n";
  const auto translated = run_program(program + " translate --model " + folder + " --beam 3 < " +
                                      (scratch / "input.en"));
  INFO(translated.output);
  CHECK(translated.status == 0);
  std::size_t lines = 0;
  for (char c : translated.output) lines += c == '\n';
  CHECK(lines == 3);  // the empty line gives an empty translation
  const auto n_best = run_program(program + " translate --model " + folder +
                                  " --beam 3 --n-best 2 < " + (scratch / "input.en"));
  CHECK(n_best.status == 0);
  CHECK(n_best.output.find("0 ||| ") == 0);

  std::ofstream(scratch / "pair.en") << "the file\n";
  std::ofstream(scratch / "pair.de") << "die Datei\n";
  const auto scored = run_program(program + " score --model " + folder + " --source " +
                                  (scratch / "pair.en") + " --target " + (scratch / "pair.de"));
  CHECK(scored.status == 0);
  CHECK(scored.output.find('\t') != std::string::npos);
  CHECK(std::stod(scored.output) < 0);

  const auto no_folder =
      run_program(program + " translate --model " + (scratch / "missing") + " < /dev/null");
  CHECK(no_folder.status != 0);
  CHECK(no_folder.output.find("is not a gru_nmt model folder") != std::string::npos);
  const auto bad_flag =
      run_program(program + " train --model " + (scratch / "x") + " --norm rmsnorm --steps 0");
  CHECK(bad_flag.status != 0);
  const auto missing_data = run_program(program + " train --model " + (scratch / "y"));
  CHECK(missing_data.status != 0);
  CHECK(missing_data.output.find("needs --train-source") != std::string::npos);
  // A second model with the first one's tokenizer: no tokenizer training, the same model file.
  const std::string data_flags = " --train-source " + train.source + " --train-target " +
                                 train.target + " --dev-source " + dev.source + " --dev-target " +
                                 dev.target + " --embedding 12 --hidden 16 --threads 1";
  const auto shared = run_program(program + " train --model " + (scratch / "shared") + data_flags +
                                  " --vocabulary 100 --steps 1 --tokenizer " + folder +
                                  "/tokenizer.model --no-progress-bar");
  INFO(shared.output);
  CHECK(shared.status == 0);
  CHECK(shared.output.find("training the tokenizer") == std::string::npos);
  CHECK(text::read_file_bytes(scratch / "shared/tokenizer.model", "test") ==
        text::read_file_bytes(folder + "/tokenizer.model", "test"));
  const auto wrong_size =
      run_program(program + " train --model " + (scratch / "wrong") + data_flags +
                  " --vocabulary 90 --steps 1 --tokenizer " + folder + "/tokenizer.model");
  CHECK(wrong_size.status == 1);
  CHECK(wrong_size.output.find("has 100 pieces, but the model's vocabulary is 90") !=
        std::string::npos);
  CHECK_FALSE(fs::exists(scratch / "wrong/config.json"));
  const auto n_best_too_big = run_program(program + " translate --model " + folder +
                                          " --beam 2 --n-best 3 < " + (scratch / "input.en"));
  CHECK(n_best_too_big.status != 0);
  CHECK(n_best_too_big.output.find("more than the beam") != std::string::npos);
}

TEST_CASE("gru_nmt train --profile writes a trace and a table of its steps") {
  const auto train = testing::small_parallel_corpus("gru_nmt_profile_train", 60);
  const auto dev = testing::small_parallel_corpus("gru_nmt_profile_dev", 6);
  ScratchFolder scratch("gru_nmt_profile");
  const std::string corpus = " --train-source " + train.source + " --train-target " + train.target +
                             " --dev-source " + dev.source + " --dev-target " + dev.target +
                             " --threads 1 --no-progress-bar";
  const std::string program = NORMGRAD_GRU_NMT_PROGRAM;
  testing::check_profile_flag(program + " train --model " + (scratch / "model") + corpus +
                                  " --preset tiny --steps 4 --dev-bleu-every 4",
                              scratch.path.string(),
                              program + " train --model " + (scratch / "refused") + corpus,
                              scratch / "refused");
}

TEST_CASE("gru_nmt trains, translates and scores in mixed precision") {
  testing::check_mixed_precision_program(NORMGRAD_GRU_NMT_PROGRAM, "gru_nmt_bf16");
}

#endif
