// transformer_nmt as a program: training into a model folder, exact resume, checkpoint
// averaging, translate and score from the folder alone, and refusals of bad flags and folders.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "helpers.h"
#include "nmt/train_log.h"
#include "parallel_text_fixture.h"
#include "run_program.h"
#include "scratch_folder.h"
#include "transformer_nmt/model_folder.h"
#include "transformer_nmt/trainer.h"

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
  t.train_source = train.source;
  t.train_target = train.target;
  t.dev_source = dev.source;
  t.dev_target = dev.target;
  t.batch_tokens = 200;
  t.warmup_steps = 4;
  t.learning_rate = 3e-3;
  t.max_steps = 8;
  t.dev_loss_every = 4;
  t.dev_bleu_every = 4;
  t.checkpoint_every = 4;
  return settings;
}

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
}

#endif
