#include "training.h"

#include <chrono>
#include <cmath>
#include <sstream>

#include "common/classification.h"
#include "common/progress.h"
#include "common/record_csv.h"
#include "common/training_state.h"

namespace convpool_cnn_c {

namespace ng = normgrad;
using ng::Tensor;

namespace {

// Misclassified images among a batch's logits [N, 10] and labels [N].
std::int64_t mistakes(const Tensor& logits, const Tensor& labels) {
  return static_cast<std::int64_t>(
      ng::ne(ng::argmax(logits, 1), labels).to(ng::DType::Float64).sum().item());
}

// Each value summed over the ranks of a data-parallel job.
std::vector<double> sum_over_ranks(std::vector<double> values) {
  Tensor sums = ng::from_vector(values, {std::ssize(values)}).to(ng::DType::Float64);
  ng::distributed::ProcessGroup::world().all_reduce(sums);
  return sums.to_vector<double>();
}

const std::vector<examples::CsvColumn<EpochRecord>>& history_columns() {
  static const std::vector<examples::CsvColumn<EpochRecord>> columns{
      {"epoch", &EpochRecord::epoch},
      {"train_loss", &EpochRecord::train_loss},
      {"train_error", &EpochRecord::train_error},
      {"test_error", &EpochRecord::test_error},
      {"seconds", &EpochRecord::seconds},
      {"learning_rate", &EpochRecord::learning_rate},
      {"beta1", &EpochRecord::beta1}};
  return columns;
}

}  // namespace

std::string describe(const ModelConfig& config) {
  std::ostringstream out;
  out.precision(17);
  out << "norm=" << parse_model_norm(config.norm).str()
      << " input_channels=" << config.input_channels << " width=" << config.width
      << " input_noise=" << config.input_noise << " dropout=" << config.dropout
      << " seed=" << config.seed;
  // Named only when not the default, so that checkpoints written before it existed still match.
  if (config.precision != "float32") out << " precision=" << config.precision;
  return out.str();
}

double base_learning_rate(const ng::nn::NormSpec& norm) {
  return norm.kind == ng::nn::NormKind::None ? 3e-4 : 3e-3;
}

EpochSchedule schedule_for(std::int64_t epoch, std::int64_t epochs, double base) {
  const double half = static_cast<double>(epochs) / 2;
  return {.learning_rate = base * std::min(2.0 - static_cast<double>(epoch) / half, 1.0),
          .beta1 = static_cast<double>(epoch) < half ? 0.9 : 0.5};
}

std::string history_csv(const std::vector<EpochRecord>& history) {
  return examples::records_csv(history_columns(), history);
}

std::vector<EpochRecord> parse_history_csv(const std::string& text) {
  return examples::parse_records_csv(history_columns(), text, "convpool_cnn_c");
}

ng::optim::AdamOptions paper_adam(double learning_rate) {
  return {.lr = learning_rate, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .eps_inside_sqrt = true};
}

StepResult train_step(ConvPoolCnnC& model, ng::optim::Adam& adam, const Tensor& images,
                      const Tensor& labels) {
  model.train();
  adam.zero_grad();
  const Tensor logits = model.forward(images);
  const Tensor loss = ng::nn::cross_entropy(logits, labels);
  loss.backward();
  adam.step();
  ng::NoGradGuard no_grad;
  return {.loss = loss.item(), .mistakes = mistakes(logits.detach(), labels)};
}

double classification_error(ConvPoolCnnC& model, const ng::data::ImageDataset& dataset,
                            ng::Device device, std::int64_t batch, const ng::data::Shard& shard) {
  const std::int64_t count = dataset.images.size(0);
  auto correct = static_cast<double>(examples::count_correct(model, dataset, device, batch, shard));
  if (shard.count > 1) correct = sum_over_ranks({correct})[0];
  return count == 0 ? 0.0 : (static_cast<double>(count) - correct) / static_cast<double>(count);
}

Trainer::Trainer(const ModelConfig& model, const TrainSettings& settings, const PreparedData& data,
                 ng::Device device, const ng::data::Shard& shard)
    : settings_(settings), data_(data), device_(device), shard_(shard) {
  ng::data::check_shard(shard, "convpool_cnn_c");
  const std::int64_t images = data.train.images.size(0);
  NG_CHECK(settings.epochs >= 1, "convpool_cnn_c", "--epochs must be at least 1, got ",
           settings.epochs);
  NG_CHECK(settings.batch_size >= 1 && settings.batch_size <= images, "convpool_cnn_c", "--batch ",
           settings.batch_size, " needs 1 to ", images, " (the training images)");
  NG_CHECK(settings.init_images >= 2 && settings.init_images <= images, "convpool_cnn_c",
           "--init-images ", settings.init_images, " needs 2 to ", images,
           " (the training images)");
  NG_CHECK(settings.learning_rate >= 0 && std::isfinite(settings.learning_rate), "convpool_cnn_c",
           "--lr must be positive, or 0 for the paper's, got ", settings.learning_rate);
  NG_CHECK(data.train.images.dim() == 4 && data.train.images.size(1) == model.input_channels,
           "convpool_cnn_c", "the model takes ", model.input_channels,
           " input channels, the training images have shape ", data.train.images.shape());
  model_ = std::make_unique<ConvPoolCnnC>(model);
  model_->to(device);
  base_learning_rate_ = settings.learning_rate > 0
                            ? settings.learning_rate
                            : convpool_cnn_c::base_learning_rate(parse_model_norm(model.norm));
  model_->initialise_from_data(data.train.images.narrow(0, 0, settings.init_images).to(device));
  adam_ = std::make_unique<ng::optim::Adam>(model_->parameters(), paper_adam(base_learning_rate_));
  NG_CHECK(batches_per_epoch() >= 1, "convpool_cnn_c", images / settings.batch_size,
           " batches an epoch cannot be shared by ", shard.count, " ranks: use smaller batches");
  if (shard.count > 1) parallel_ = std::make_unique<ng::distributed::DataParallel>(*model_);
}

std::int64_t Trainer::batches_per_epoch() const {
  return data_.train.images.size(0) / settings_.batch_size / shard_.count;
}

EpochRecord Trainer::run_epoch(const StepCallback& on_step) {
  NG_CHECK(!finished(), "convpool_cnn_c", "all ", settings_.epochs, " epochs are done");
  const std::int64_t epoch = epochs_done();
  const EpochSchedule schedule = schedule_for(epoch, settings_.epochs, base_learning_rate_);
  adam_->set_lr(schedule.learning_rate);
  adam_->set_beta1(schedule.beta1);
  // Each epoch's order comes from the seed and the epoch alone, so a resumed run sees the same.
  ng::data::DataLoader loader(data_.train.images, data_.train.labels,
                              {.batch_size = settings_.batch_size,
                               .shuffle = true,
                               .drop_last = true,
                               .seed = settings_.seed * 1000003 + static_cast<std::uint64_t>(epoch),
                               .shard = shard_});
  const ng::data::Epoch batches = loader.epoch();
  model_->train();
  double loss_sum = 0;
  std::int64_t wrong = 0, seen = 0;
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < batches.size(); ++i) {
    const auto [images, labels] = batches[i];
    const StepResult step = train_step(*model_, *adam_, images.to(device_), labels.to(device_));
    loss_sum += step.loss;
    wrong += step.mistakes;
    seen += images.size(0);
    if (on_step)
      on_step({.epoch = epoch + 1,
               .epochs = settings_.epochs,
               .batch = static_cast<std::int64_t>(i) + 1,
               .batches = static_cast<std::int64_t>(batches.size()),
               .loss = step.loss});
  }
  double batch_count = static_cast<double>(batches.size());
  if (shard_.count > 1) {
    // The whole job's epoch: every rank's batches; and rank 0's BatchNorm statistics, which
    // its checkpoint keeps, for every rank's share of the test.
    const std::vector<double> sums = sum_over_ranks(
        {loss_sum, static_cast<double>(wrong), static_cast<double>(seen), batch_count});
    loss_sum = sums[0];
    wrong = static_cast<std::int64_t>(sums[1]);
    seen = static_cast<std::int64_t>(sums[2]);
    batch_count = sums[3];
    parallel_->broadcast_buffers();
  }
  EpochRecord record{.epoch = epoch + 1,
                     .train_loss = loss_sum / batch_count,
                     .train_error = static_cast<double>(wrong) / static_cast<double>(seen),
                     .seconds = examples::seconds_since(start),
                     .learning_rate = schedule.learning_rate,
                     .beta1 = schedule.beta1};
  record.test_error = classification_error(*model_, data_.test, device_, 500, shard_);
  history_.push_back(record);
  return record;
}

examples::RunState Trainer::run_state() const {
  return {*model_, *adam_, model_->noise_generator(), "convpool_cnn_c", describe(model_->config())};
}

void Trainer::save_state(const std::string& path) const {
  examples::save_run_state(path, run_state(), epochs_done(), history_csv(history_));
}

void Trainer::load_state(const std::string& path) {
  const examples::LoadedRunState loaded = examples::load_run_state(path, run_state());
  std::vector<EpochRecord> history = parse_history_csv(loaded.history);
  NG_CHECK(static_cast<std::int64_t>(history.size()) == loaded.steps, "convpool_cnn_c", "'", path,
           "' records ", history.size(), " epochs but says ", loaded.steps, " were done");
  NG_CHECK(loaded.steps <= settings_.epochs, "convpool_cnn_c", "'", path, "' has ", loaded.steps,
           " epochs done, more than --epochs ", settings_.epochs);
  history_ = std::move(history);
}

}  // namespace convpool_cnn_c
