#include "training.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

#include "common/classification.h"
#include "common/progress.h"
#include "common/training_loop.h"

namespace mnist_mlp {

namespace ng = normgrad;

namespace {

void check_settings(const RunSettings& settings, const ng::data::ImageDataset& train) {
  NG_CHECK(settings.batch_size > 0 && settings.steps > 0, "mnist_mlp::train_run",
           "batch size and steps must be positive, got ", settings.batch_size, " and ",
           settings.steps);
  NG_CHECK(settings.batch_size <= train.images.size(0), "mnist_mlp::train_run", "batch size ",
           settings.batch_size, " is larger than the ", train.images.size(0), " training images");
  NG_CHECK(settings.lr > 0 && std::isfinite(settings.lr), "mnist_mlp::train_run",
           "the learning rate must be positive, got ", settings.lr);
  NG_CHECK(settings.eval_every >= 0 && settings.log_every >= 0 && settings.eval_batch > 0,
           "mnist_mlp::train_run", "eval_every and log_every must be >= 0 and eval_batch > 0");
  NG_CHECK(train.images.size(1) == settings.shape.inputs, "mnist_mlp::train_run",
           "the images have ", train.images.size(1), " pixels but the model takes ",
           settings.shape.inputs);
}

}  // namespace

std::int64_t steps_for_epochs(double epochs, std::int64_t examples, std::int64_t batch_size) {
  NG_CHECK(epochs > 0 && batch_size > 0 && examples >= batch_size, "mnist_mlp::steps_for_epochs",
           "need epochs > 0 and 0 < batch size <= examples, got ", epochs, ", ", batch_size,
           " and ", examples);
  const std::int64_t per_epoch = examples / batch_size;
  return std::max<std::int64_t>(1, std::llround(epochs * static_cast<double>(per_epoch)));
}

double test_accuracy(ng::nn::Layer& model, const ng::data::ImageDataset& dataset, ng::Device device,
                     std::int64_t batch) {
  const std::int64_t count = dataset.images.size(0);
  const std::int64_t correct = examples::count_correct(model, dataset, device, batch);
  return count == 0 ? 0.0 : static_cast<double>(correct) / static_cast<double>(count);
}

RunResult train_run(const RunSettings& settings, const ng::data::ImageDataset& train,
                    const ng::data::ImageDataset& test, const StepCallback& on_step,
                    const examples::ProfileFlags& profile) {
  const ng::nn::NormSpec norm = parse_model_norm(settings.norm);
  check_settings(settings, train);
  const auto model = make_model(norm, settings.shape, settings.seed);
  model->to(settings.device);
  ng::optim::Adam optimizer(model->parameters(), {.lr = settings.lr});
  ng::data::DataLoader loader(train.images, train.labels,
                              {.batch_size = settings.batch_size,
                               .shuffle = true,
                               .drop_last = true,
                               .seed = settings.seed});

  const std::int64_t log_every =
      settings.log_every > 0 ? settings.log_every : std::max<std::int64_t>(1, settings.steps / 100);
  RunResult result{.norm = settings.norm,
                   .batch_size = settings.batch_size,
                   .steps = settings.steps,
                   .parameters = count_parameters(*model)};

  double wall_seconds = 0;
  std::optional<ng::data::Epoch> epoch;  // the batches under way; a new order once used up
  std::size_t batch = 0;
  const auto train_step = [&] {
    if (!epoch || batch == epoch->size()) {
      epoch = loader.epoch();
      batch = 0;
    }
    // The clock covers everything a training step costs: copying the batch out, the forward
    // and backward passes and the update; evaluation is left out. On a GPU, reading the loss
    // waits for the step to finish.
    const auto start = std::chrono::steady_clock::now();
    const auto [images, labels] = (*epoch)[batch++];
    const ng::Tensor loss = ng::nn::cross_entropy(model->forward(images.to(settings.device)),
                                                  labels.to(settings.device));
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    const double loss_value = loss.item();
    wall_seconds += examples::seconds_since(start);
    return loss_value;
  };

  double loss_sum = 0;  // since the previous curve point
  std::int64_t loss_count = 0;
  const auto after_step = [&](const examples::StepDone& done) {
    loss_sum += done.loss;
    ++loss_count;
    if (done.score || done.step % log_every == 0) {
      result.curve.push_back({.step = done.step,
                              .wall_seconds = wall_seconds,
                              .train_loss = loss_sum / static_cast<double>(loss_count),
                              .test_accuracy = done.score});
      loss_sum = 0;
      loss_count = 0;
    }
    if (on_step) on_step(done.step, done.loss);
  };

  examples::StepProfile step_profile(profile, *model, "mnist_mlp");
  examples::LoopRecord record;
  examples::run_training_loop(
      {.steps = settings.steps, .validate_every = settings.eval_every, .validate_at_end = true},
      record,
      {.train_step = step_profile.around(train_step),
       .validate =
           [&] { return test_accuracy(*model, test, settings.device, settings.eval_batch); },
       .better = examples::Better::Higher,
       .after_step = after_step});
  result.train_seconds = wall_seconds;
  result.ms_per_step = 1000.0 * wall_seconds / static_cast<double>(settings.steps);
  result.test_accuracy = *result.curve.back().test_accuracy;
  return result;
}

}  // namespace mnist_mlp
