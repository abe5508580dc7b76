#include "training.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "common/number_text.h"
#include "common/record_csv.h"

namespace attentive_reader {

namespace ng = normgrad;
using ng::Tensor;

namespace {

std::int64_t mistakes(const Tensor& logits, const Tensor& answers) {
  return static_cast<std::int64_t>(
      ng::ne(ng::argmax(logits, 1), answers).to(ng::DType::Float64).sum().item());
}

const std::vector<examples::CsvColumn<ValidationRecord>> kHistoryColumns{
    {"step", &ValidationRecord::step},
    {"seconds", &ValidationRecord::seconds},
    {"train_loss", &ValidationRecord::train_loss},
    {"train_error", &ValidationRecord::train_error},
    {"valid_error", &ValidationRecord::valid_error},
    {"valid_loss", &ValidationRecord::valid_loss}};

}  // namespace

std::string history_csv(const std::vector<ValidationRecord>& history) {
  return examples::records_csv(kHistoryColumns, history);
}

std::vector<ValidationRecord> parse_history_csv(const std::string& text) {
  return examples::parse_records_csv(kHistoryColumns, text, "attentive_reader");
}

std::string ValidationRecord::text() const {
  char text[96];
  std::snprintf(text, sizeof text,
                "loss %.3f  train error %5.1f%%  valid error %5.1f%% (loss %.3f)", train_loss,
                100 * train_error, 100 * valid_error, valid_loss);
  return text;
}

std::string ValidationRecord::best_text() const {
  std::string text = "lowest validation error ";
  text += examples::format_number("%.2f%%", 100 * valid_error);
  text += " at step ";
  return text += std::to_string(step);
}

Evaluation evaluate_questions(AttentiveReader& model, const std::vector<Question>& questions,
                              const ReaderVocabulary& vocabulary, ng::Device device,
                              std::int64_t batch_size) {
  NG_CHECK(!questions.empty(), "attentive_reader", "no questions to evaluate");
  ng::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  Evaluation result;
  double loss_sum = 0;
  std::int64_t wrong = 0;
  const auto count = static_cast<std::int64_t>(questions.size());
  for (std::int64_t first = 0; first < count; first += batch_size) {
    std::vector<std::int64_t> indices;
    for (std::int64_t i = first; i < std::min(count, first + batch_size); ++i) indices.push_back(i);
    const QuestionBatch batch =
        make_batch(questions, indices, vocabulary, {}, model.config().answers == "document")
            .to(device);
    const Tensor logits = model.forward(batch);
    loss_sum +=
        ng::nn::cross_entropy(logits, batch.answers, {.reduction = ng::nn::Reduction::Sum}).item();
    wrong += mistakes(logits, batch.answers);
  }
  model.train(was_training);
  result.questions = count;
  result.error = static_cast<double>(wrong) / static_cast<double>(count);
  result.loss = loss_sum / static_cast<double>(count);
  return result;
}

std::vector<std::int64_t> batch_questions(const TrainSettings& settings, std::int64_t step,
                                          std::int64_t questions) {
  const std::int64_t per_epoch = questions / settings.batch_size;
  NG_CHECK(per_epoch >= 1, "attentive_reader", "batches of ", settings.batch_size,
           " need at least as many training questions, got ", questions);
  const std::int64_t epoch = step / per_epoch, position = step % per_epoch;
  const std::vector<std::int64_t> order =
      random_permutation(questions, settings.seed * 1000003 + static_cast<std::uint64_t>(epoch));
  return {order.begin() + position * settings.batch_size,
          order.begin() + (position + 1) * settings.batch_size};
}

Trainer::Trainer(const ModelConfig& model, const TrainSettings& settings,
                 const std::vector<Question>& training, const std::vector<Question>& validation,
                 const ReaderVocabulary& vocabulary, ng::Device device)
    : settings_(settings),
      training_(training),
      validation_(validation),
      vocabulary_(vocabulary),
      device_(device) {
  examples::check_step_training(settings, "attentive_reader");
  NG_CHECK(
      settings.batch_size >= 1 && settings.batch_size <= static_cast<std::int64_t>(training.size()),
      "attentive_reader", "--batch ", settings.batch_size, " needs 1 to ", training.size(),
      " (the training questions)");
  NG_CHECK(!validation.empty(), "attentive_reader", "there are no validation questions");
  model_ = std::make_unique<AttentiveReader>(model);
  model_->to(device);
  adam_ = std::make_unique<ng::optim::Adam>(model_->parameters(),
                                            ng::optim::AdamOptions{.lr = settings.learning_rate});
}

Trainer::StepResult Trainer::step(const QuestionBatch& batch) {
  model_->train();
  adam_->zero_grad();
  const Tensor logits = model_->forward(batch);
  const Tensor loss = ng::nn::cross_entropy(logits, batch.answers);
  loss.backward();
  if (settings_.clip > 0) ng::optim::clip_grad_norm(model_->parameters(), settings_.clip);
  adam_->step();
  ng::NoGradGuard no_grad;
  return {.loss = loss.item(), .mistakes = mistakes(logits.detach(), batch.answers)};
}

double Trainer::train_step() {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<std::int64_t> indices =
      batch_questions(settings_, steps_done_, static_cast<std::int64_t>(training_.size()));
  const std::vector<std::int64_t> renumbering = random_permutation(
      vocabulary_.entities(), settings_.seed * 7777 + static_cast<std::uint64_t>(steps_done_));
  const StepResult result = step(make_batch(training_, indices, vocabulary_, renumbering,
                                            model_->config().answers == "document")
                                     .to(device_));
  NG_CHECK(std::isfinite(result.loss), "attentive_reader", "the loss became ", result.loss,
           " at step ", steps_done_ + 1);
  ++steps_done_;
  since_validation_.add(result.loss, start);
  wrong_ += result.mistakes;
  answered_ += static_cast<std::int64_t>(indices.size());
  return result.loss;
}

const ValidationRecord& Trainer::validate() {
  const Evaluation valid = evaluate_questions(*model_, validation_, vocabulary_, device_);
  const double seconds_before = history_.empty() ? 0.0 : history_.back().seconds;
  history_.push_back({.step = steps_done_,
                      .seconds = seconds_before + since_validation_.seconds,
                      .train_loss = since_validation_.mean_loss(),
                      .train_error = static_cast<double>(wrong_) / static_cast<double>(answered_),
                      .valid_error = valid.error,
                      .valid_loss = valid.loss});
  since_validation_ = {};
  wrong_ = answered_ = 0;
  return history_.back();
}

examples::RunState Trainer::run_state() {
  return {*model_, *adam_, model_->noise_generator(), "attentive_reader",
          describe(model_->config())};
}

void Trainer::save_state(const std::string& path) {
  examples::save_run_state(path, run_state(), steps_done_, history_csv(history_));
}

void Trainer::load_state(const std::string& path) {
  const examples::LoadedRunState loaded = examples::load_run_state(path, run_state());
  std::vector<ValidationRecord> history = parse_history_csv(loaded.history);
  examples::check_validated_state(path, "attentive_reader", loaded.steps, history, settings_.steps);
  steps_done_ = loaded.steps;
  history_ = std::move(history);
}

}  // namespace attentive_reader
