// Training the ConvPool-CNN-C example (examples/convpool_cnn_c/training.h): the paper's
// schedule, a tiny model that learns, exact resume, the history, and bad settings.
#include <doctest/doctest.h>

#include "convpool_cnn_c/training.h"
#include "helpers.h"
#include "scratch_folder.h"

using namespace normgrad;
using convpool_cnn_c::ModelConfig;
using convpool_cnn_c::Trainer;
using convpool_cnn_c::TrainSettings;
using testing::all_close;

namespace {

// 120 training and 40 test images of Fashion-MNIST, framed, scaled and whitened once.
const convpool_cnn_c::PreparedData& small_data() {
  static const auto data = convpool_cnn_c::prepare_data({.train_size = 120, .test_size = 40});
  return data;
}

ModelConfig tiny(const std::string& norm) {
  return {.norm = norm, .input_channels = 1, .width = 0.05, .seed = 5};
}

TrainSettings few_epochs(std::int64_t epochs) {
  return {.epochs = epochs, .batch_size = 20, .init_images = 40, .seed = 2};
}

}  // namespace

TEST_CASE("ConvPool-CNN-C schedule: the paper's learning rate and beta1 over 200 epochs") {
  using convpool_cnn_c::schedule_for;
  CHECK(schedule_for(0, 200, 0.003).learning_rate == doctest::Approx(0.003));
  CHECK(schedule_for(0, 200, 0.003).beta1 == 0.9);
  CHECK(schedule_for(99, 200, 0.003).learning_rate == doctest::Approx(0.003));
  CHECK(schedule_for(99, 200, 0.003).beta1 == 0.9);
  CHECK(schedule_for(100, 200, 0.003).learning_rate == doctest::Approx(0.003));
  CHECK(schedule_for(100, 200, 0.003).beta1 == 0.5);
  CHECK(schedule_for(150, 200, 0.003).learning_rate == doctest::Approx(0.0015));
  CHECK(schedule_for(199, 200, 0.003).learning_rate == doctest::Approx(0.00003));
  CHECK(convpool_cnn_c::base_learning_rate(nn::NormSpec::parse("none")) == 3e-4);
  CHECK(convpool_cnn_c::base_learning_rate(nn::NormSpec::parse("rmsnorm")) == 3e-3);
}

TEST_CASE("ConvPool-CNN-C: a tiny model learns, every epoch recorded") {
  // An output norm, a weight norm with data-dependent initialisation, and batch norm in mixed
  // precision.
  for (const auto& setting : {std::pair{"rmsnorm", "float32"}, std::pair{"weightnorm", "float32"},
                              std::pair{"batchnorm", "bfloat16"}}) {
    const auto& norm = setting.first;
    const auto& precision = setting.second;
    INFO("norm: " << norm << ", precision: " << precision);
    ModelConfig config = tiny(norm);
    config.precision = precision;
    Trainer trainer(config, few_epochs(4), small_data(), Device::cpu());
    CHECK(trainer.batches_per_epoch() == 6);
    std::int64_t steps = 0;
    while (!trainer.finished())
      trainer.run_epoch([&](const convpool_cnn_c::StepReport& report) {
        ++steps;
        CHECK(report.batches == 6);
        CHECK(std::isfinite(report.loss));
      });
    CHECK(steps == 24);
    const auto& history = trainer.history();
    REQUIRE(history.size() == 4);
    CHECK(history[3].train_loss < history[0].train_loss);
    CHECK(history[3].test_error >= 0);
    CHECK(history[3].test_error <= 1);
    CHECK(history[3].beta1 == 0.5);
    CHECK(history[0].learning_rate == trainer.base_learning_rate());
    CHECK_ERROR(trainer.run_epoch(), "all 4 epochs are done");
  }
}

TEST_CASE("ConvPool-CNN-C: a resumed run continues exactly as an uninterrupted one") {
  testing::ScratchFolder scratch("convpool_resume");
  std::filesystem::create_directories(scratch.path);
  const std::string state = scratch / "state.safetensors";
  Trainer straight(tiny("rmsnorm"), few_epochs(3), small_data(), Device::cpu());
  for (int i = 0; i < 3; ++i) straight.run_epoch();

  Trainer first(tiny("rmsnorm"), few_epochs(3), small_data(), Device::cpu());
  first.run_epoch();
  first.run_epoch();
  first.save_state(state);
  Trainer resumed(tiny("rmsnorm"), few_epochs(3), small_data(), Device::cpu());
  resumed.load_state(state);
  CHECK(resumed.epochs_done() == 2);
  resumed.run_epoch();

  const auto a = straight.model().named_parameters(), b = resumed.model().named_parameters();
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].first);
    CHECK(all_close(a[i].second, b[i].second, 0, 0));
  }
  for (std::size_t e = 0; e < 3; ++e) {
    CHECK(straight.history()[e].train_loss == resumed.history()[e].train_loss);
    CHECK(straight.history()[e].test_error == resumed.history()[e].test_error);
  }
  // A state from another model is refused before anything changes.
  Trainer other(tiny("layernorm"), few_epochs(3), small_data(), Device::cpu());
  CHECK_ERROR(other.load_state(state), "norm=layernorm", "norm=rmsnorm");
  CHECK(other.epochs_done() == 0);
  // More epochs done than this run has.
  Trainer shorter(tiny("rmsnorm"), few_epochs(1), small_data(), Device::cpu());
  CHECK_ERROR(shorter.load_state(state), "2 epochs done", "--epochs 1");
}

TEST_CASE("ConvPool-CNN-C: the history as CSV and back, damage refused") {
  const std::vector<convpool_cnn_c::EpochRecord> history{{.epoch = 1,
                                                          .train_loss = 2.25,
                                                          .train_error = 0.5,
                                                          .test_error = 0.4,
                                                          .seconds = 1.5,
                                                          .learning_rate = 0.003,
                                                          .beta1 = 0.9},
                                                         {.epoch = 2,
                                                          .train_loss = 1.0 / 3,
                                                          .train_error = 0.25,
                                                          .test_error = 0.3,
                                                          .seconds = 2,
                                                          .learning_rate = 0.0015,
                                                          .beta1 = 0.5}};
  const std::string csv = convpool_cnn_c::history_csv(history);
  CHECK(csv.rfind("epoch,train_loss,train_error,test_error,seconds,learning_rate,beta1\n", 0) == 0);
  const auto back = convpool_cnn_c::parse_history_csv(csv);
  REQUIRE(back.size() == 2);
  CHECK(back[1].train_loss == history[1].train_loss);
  CHECK(back[1].beta1 == 0.5);
  CHECK_ERROR(convpool_cnn_c::parse_history_csv("nonsense\n"), "header");
  CHECK_ERROR(convpool_cnn_c::parse_history_csv(csv + "7,1,2\n"), "line 4", "damaged");
}

TEST_CASE("ConvPool-CNN-C refuses training settings it cannot run") {
  const auto& data = small_data();
  CHECK_ERROR(Trainer(tiny("rmsnorm"), {.epochs = 0}, data, Device::cpu()), "--epochs", "0");
  CHECK_ERROR(Trainer(tiny("rmsnorm"), {.batch_size = 121}, data, Device::cpu()), "--batch 121",
              "120");
  CHECK_ERROR(Trainer(tiny("rmsnorm"), {.init_images = 500}, data, Device::cpu()),
              "--init-images 500");
  CHECK_ERROR(
      Trainer(tiny("rmsnorm"), {.learning_rate = -1, .init_images = 40}, data, Device::cpu()),
      "--lr");
  ModelConfig three_channels = tiny("rmsnorm");
  three_channels.input_channels = 3;
  CHECK_ERROR(Trainer(three_channels, few_epochs(1), data, Device::cpu()), "3 input channels",
              "[120, 1, 32, 32]");
}
