#include "training.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>

namespace attentive_reader {

namespace ng = normgrad;
using ng::Tensor;

namespace {

constexpr const char* kHeader = "step,seconds,train_loss,train_error,valid_error,valid_loss";

std::int64_t mistakes(const Tensor& logits, const Tensor& answers) {
  return static_cast<std::int64_t>(
      ng::ne(ng::argmax(logits, 1), answers).to(ng::DType::Float64).sum().item());
}

}  // namespace

std::string history_csv(const std::vector<ValidationRecord>& history) {
  std::ostringstream out;
  out.precision(17);
  out << kHeader << '\n';
  for (const ValidationRecord& r : history)
    out << r.step << ',' << r.seconds << ',' << r.train_loss << ',' << r.train_error << ','
        << r.valid_error << ',' << r.valid_loss << '\n';
  return out.str();
}

std::vector<ValidationRecord> parse_history_csv(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  NG_CHECK(line == kHeader, "attentive_reader",
           "the training history does not start with its header");
  std::vector<ValidationRecord> history;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    ValidationRecord r;
    char comma[5];
    std::istringstream fields(line);
    fields >> r.step >> comma[0] >> r.seconds >> comma[1] >> r.train_loss >> comma[2] >>
        r.train_error >> comma[3] >> r.valid_error >> comma[4] >> r.valid_loss;
    NG_CHECK(!fields.fail() && (history.empty() || r.step > history.back().step),
             "attentive_reader", "line ", history.size() + 2,
             " of the training history is damaged: '", line, "'");
    history.push_back(r);
  }
  return history;
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
  NG_CHECK(settings.steps >= 1, "attentive_reader", "--steps must be at least 1, got ",
           settings.steps);
  NG_CHECK(
      settings.batch_size >= 1 && settings.batch_size <= static_cast<std::int64_t>(training.size()),
      "attentive_reader", "--batch ", settings.batch_size, " needs 1 to ", training.size(),
      " (the training questions)");
  NG_CHECK(!validation.empty(), "attentive_reader", "there are no validation questions");
  NG_CHECK(settings.valid_every >= 1, "attentive_reader", "--valid-every must be at least 1, got ",
           settings.valid_every);
  NG_CHECK(settings.learning_rate > 0 && std::isfinite(settings.learning_rate), "attentive_reader",
           "--lr must be positive, got ", settings.learning_rate);
  NG_CHECK(settings.clip >= 0 && std::isfinite(settings.clip), "attentive_reader",
           "--clip must be 0 (none) or positive, got ", settings.clip);
  model_ = std::make_unique<AttentiveReader>(model);
  model_->to(device);
  adam_ = std::make_unique<ng::optim::Adam>(model_->parameters(),
                                            ng::optim::AdamOptions{.lr = settings.learning_rate});
}

std::int64_t Trainer::steps_per_epoch() const {
  return static_cast<std::int64_t>(training_.size()) / settings_.batch_size;
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

ValidationRecord Trainer::run_to_validation(const StepCallback& on_step) {
  NG_CHECK(!finished(), "attentive_reader", "all ", settings_.steps, " steps are done");
  const std::int64_t until =
      std::min(settings_.steps, (steps_done_ / settings_.valid_every + 1) * settings_.valid_every);
  const auto start = std::chrono::steady_clock::now();
  double loss_sum = 0;
  std::int64_t wrong = 0, seen = 0;
  const std::int64_t first = steps_done_;
  for (; steps_done_ < until; ++steps_done_) {
    const std::vector<std::int64_t> indices =
        batch_questions(settings_, steps_done_, static_cast<std::int64_t>(training_.size()));
    const std::vector<std::int64_t> renumbering = random_permutation(
        vocabulary_.entities(), settings_.seed * 7777 + static_cast<std::uint64_t>(steps_done_));
    const StepResult result = step(make_batch(training_, indices, vocabulary_, renumbering,
                                              model_->config().answers == "document")
                                       .to(device_));
    NG_CHECK(std::isfinite(result.loss), "attentive_reader", "the loss became ", result.loss,
             " at step ", steps_done_ + 1);
    loss_sum += result.loss;
    wrong += result.mistakes;
    seen += static_cast<std::int64_t>(indices.size());
    if (on_step) on_step({.step = steps_done_ + 1, .steps = settings_.steps, .loss = result.loss});
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const Evaluation valid = evaluate_questions(*model_, validation_, vocabulary_, device_);
  ValidationRecord record{.step = steps_done_,
                          .seconds = (history_.empty() ? 0.0 : history_.back().seconds) + seconds,
                          .train_loss = loss_sum / static_cast<double>(steps_done_ - first),
                          .train_error = static_cast<double>(wrong) / static_cast<double>(seen),
                          .valid_error = valid.error,
                          .valid_loss = valid.loss};
  const ValidationRecord* previous_best = best();
  improved_ = previous_best == nullptr || record.valid_error < previous_best->valid_error;
  history_.push_back(record);
  return record;
}

const ValidationRecord* Trainer::best() const {
  const ValidationRecord* best = nullptr;
  for (const ValidationRecord& r : history_)
    if (best == nullptr || r.valid_error < best->valid_error) best = &r;
  return best;
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
  const std::int64_t steps = loaded.steps;
  std::vector<ValidationRecord> history = parse_history_csv(loaded.history);
  NG_CHECK(!history.empty() && history.back().step == steps, "attentive_reader", "'", path,
           "' records validations up to step ", history.empty() ? 0 : history.back().step,
           " but says ", steps, " steps were done");
  NG_CHECK(steps <= settings_.steps, "attentive_reader", "'", path, "' has ", steps,
           " steps done, more than --steps ", settings_.steps);
  history_ = std::move(history);
  steps_done_ = steps;
  improved_ = false;
}

}  // namespace attentive_reader
