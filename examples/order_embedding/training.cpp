#include "training.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <sstream>

#include "common/number_text.h"

namespace order_embedding {

namespace ng = normgrad;
using ng::Tensor;
using ng::data::RankingMetrics;
using ng::data::RetrievalScores;

namespace {

// Captions are compared against images this many violations at a time: 16M floats, 64 MB.
constexpr std::int64_t kErrorChunkValues = std::int64_t{1} << 24;

constexpr const char* kMetricColumns[] = {"r1", "r5", "r10", "median_rank", "mean_rank"};

std::vector<double> metric_values(const RankingMetrics& m) {
  return {m.recall_at[0], m.recall_at[1], m.recall_at[2], m.median_rank, m.mean_rank};
}

RankingMetrics metrics_from(const std::vector<double>& v, std::size_t first) {
  RankingMetrics m;
  for (std::size_t k = 0; k < 3; ++k) m.recall_at[k] = v[first + k];
  m.median_rank = v[first + 3];
  m.mean_rank = v[first + 4];
  return m;
}

// Embeddings of every caption and image of a split, in batches, without a graph.
struct Embeddings {
  Tensor captions, images;  // [k I, dim], [I, dim]
};
Embeddings embed(OrderEmbeddingModel& model, const Vocabulary& vocabulary,
                 const RetrievalSplit& split, ng::Device device) {
  constexpr std::size_t batch = 256;
  std::vector<Tensor> captions, images;
  for (std::size_t first = 0; first < split.captions.size(); first += batch) {
    const std::size_t last = std::min(split.captions.size(), first + batch);
    const std::vector<std::string> part(split.captions.begin() + static_cast<std::ptrdiff_t>(first),
                                        split.captions.begin() + static_cast<std::ptrdiff_t>(last));
    CaptionBatch b = vocabulary.batch(part);
    captions.push_back(model.encode_captions({b.tokens.to(device), b.lengths.to(device)}));
  }
  for (std::int64_t first = 0; first < split.image_count(); first += batch) {
    const std::int64_t size = std::min<std::int64_t>(batch, split.image_count() - first);
    images.push_back(model.encode_images(split.images.narrow(0, first, size).to(device)));
  }
  return {ng::cat(captions, 0), ng::cat(images, 0)};
}

Tensor error_matrix(const Tensor& captions, const Tensor& images) {
  const std::int64_t per_chunk =
      std::max<std::int64_t>(1, kErrorChunkValues / (images.size(0) * images.size(1)));
  std::vector<Tensor> rows;
  for (std::int64_t first = 0; first < captions.size(0); first += per_chunk) {
    const std::int64_t size = std::min(per_chunk, captions.size(0) - first);
    rows.push_back(ng::nn::order_violations(captions.narrow(0, first, size), images));
  }
  return ng::cat(rows, 0);
}

std::string metrics_text(const RankingMetrics& m) {
  using examples::format_number;
  return "R@1 " + format_number("%.1f", m.recall_at[0]) + " R@5 " +
         format_number("%.1f", m.recall_at[1]) + " R@10 " + format_number("%.1f", m.recall_at[2]) +
         " mean rank " + format_number("%.1f", m.mean_rank);
}

}  // namespace

std::string scores_text(const RetrievalScores& scores) {
  return "caption " + metrics_text(scores.caption) + " | image " + metrics_text(scores.image);
}

std::string ValidationRecord::text() const {
  return examples::format_number("loss %8.3f", train_loss) + "  dev " + scores_text(dev);
}

std::string ValidationRecord::best_text() const {
  std::string text = "best dev at step ";
  text += std::to_string(step);
  text += ": ";
  return text += scores_text(dev);
}

std::string history_csv(const std::vector<ValidationRecord>& history) {
  std::ostringstream out;
  out.precision(17);
  out << "step,seconds,train_loss";
  for (const char* direction : {"caption", "image"})
    for (const char* column : kMetricColumns) out << ',' << direction << '_' << column;
  out << '\n';
  for (const ValidationRecord& r : history) {
    out << r.step << ',' << r.seconds << ',' << r.train_loss;
    for (const RankingMetrics* m : {&r.dev.caption, &r.dev.image})
      for (const double value : metric_values(*m)) out << ',' << value;
    out << '\n';
  }
  return out.str();
}

std::vector<ValidationRecord> parse_history_csv(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  NG_CHECK(line.rfind("step,seconds,train_loss,caption_r1", 0) == 0, "order_embedding",
           "the training history does not start with its header");
  std::vector<ValidationRecord> history;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::vector<double> values;
    std::istringstream fields(line);
    std::string field;
    while (std::getline(fields, field, ',')) {
      try {
        std::size_t used = 0;
        values.push_back(std::stod(field, &used));
        NG_CHECK(used == field.size(), "order_embedding", "");
      } catch (const std::exception&) {
        values.clear();
        break;
      }
    }
    NG_CHECK(values.size() == 13, "order_embedding", "line ", history.size() + 2,
             " of the training history is damaged: '", line, "'");
    ValidationRecord r{
        .step = static_cast<std::int64_t>(values[0]),
        .seconds = values[1],
        .train_loss = values[2],
        .dev = {.caption = metrics_from(values, 3), .image = metrics_from(values, 8)}};
    NG_CHECK(history.empty() || r.step > history.back().step, "order_embedding", "line ",
             history.size() + 2, " of the training history goes back in steps: '", line, "'");
    history.push_back(r);
  }
  return history;
}

RetrievalScores evaluate_retrieval(OrderEmbeddingModel& model, const Vocabulary& vocabulary,
                                   const RetrievalSplit& split, ng::Device device,
                                   std::int64_t fold_images) {
  NG_CHECK(fold_images >= 1, "order_embedding", "folds need at least one image, got ", fold_images);
  ng::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  const Embeddings all = embed(model, vocabulary, split, device);
  std::vector<RetrievalScores> folds;
  const std::int64_t k = split.captions_per_image;
  for (std::int64_t first = 0; first < split.image_count(); first += fold_images) {
    const std::int64_t size = std::min(fold_images, split.image_count() - first);
    if (size < fold_images && !folds.empty()) break;
    const Tensor errors = error_matrix(all.captions.narrow(0, first * k, size * k),
                                       all.images.narrow(0, first, size));
    folds.push_back(ng::data::retrieval_scores(errors, k));
  }
  model.train(was_training);
  return ng::data::average_scores(folds);
}

BatchIndices batch_indices(const TrainSettings& settings, std::int64_t step, std::int64_t images,
                           std::int64_t captions_per_image) {
  const std::int64_t per_epoch = images / settings.batch_size;
  NG_CHECK(per_epoch >= 1, "order_embedding", "batches of ", settings.batch_size, " need at least ",
           settings.batch_size, " training images, got ", images);
  const std::int64_t epoch = step / per_epoch, position = step % per_epoch;
  // The epoch's order and caption choices, from the seed and the epoch alone. A Fisher-Yates
  // shuffle on mt19937_64, whose output the C++ standard fixes, so every platform agrees.
  std::mt19937_64 random(settings.seed * 1000003 + static_cast<std::uint64_t>(epoch));
  std::vector<std::int64_t> order(static_cast<std::size_t>(images));
  for (std::int64_t i = 0; i < images; ++i) order[static_cast<std::size_t>(i)] = i;
  for (std::int64_t i = images - 1; i > 0; --i)
    std::swap(order[static_cast<std::size_t>(i)],
              order[static_cast<std::size_t>(random() % static_cast<std::uint64_t>(i + 1))]);
  std::vector<std::int64_t> caption_choice(static_cast<std::size_t>(images));
  for (std::int64_t& choice : caption_choice)
    choice = static_cast<std::int64_t>(random() % static_cast<std::uint64_t>(captions_per_image));
  BatchIndices batch;
  for (std::int64_t b = 0; b < settings.batch_size; ++b) {
    const std::int64_t image = order[static_cast<std::size_t>(position * settings.batch_size + b)];
    batch.images.push_back(image);
    batch.captions.push_back(image * captions_per_image +
                             caption_choice[static_cast<std::size_t>(image)]);
  }
  return batch;
}

Trainer::Trainer(const ModelConfig& model, const TrainSettings& settings,
                 const RetrievalSplit& train, const RetrievalSplit& dev,
                 const Vocabulary& vocabulary, ng::Device device)
    : settings_(settings),
      train_(train),
      dev_(dev),
      vocabulary_(vocabulary),
      device_(device),
      generator_(settings.seed) {
  examples::check_step_training(settings, "order_embedding");
  NG_CHECK(settings.batch_size >= 2 && settings.batch_size <= train.image_count(),
           "order_embedding", "--batch ", settings.batch_size, " needs 2 to ", train.image_count(),
           " (the training images)");
  NG_CHECK(train.feature_dim() == model.image_dim && dev.feature_dim() == model.image_dim,
           "order_embedding", "the model maps ", model.image_dim, " image features, the data have ",
           train.feature_dim(), " (train) and ", dev.feature_dim(), " (dev)");
  model_ = std::make_unique<OrderEmbeddingModel>(model);
  model_->to(device);
  adam_ = std::make_unique<ng::optim::Adam>(model_->parameters(),
                                            ng::optim::AdamOptions{.lr = settings.learning_rate});
}

double Trainer::step(const CaptionBatch& captions, const Tensor& features) {
  model_->train();
  adam_->zero_grad();
  const Tensor loss = model_->loss(captions, features);
  loss.backward();
  if (settings_.clip > 0) ng::optim::clip_grad_norm_each(model_->parameters(), settings_.clip);
  adam_->step();
  return loss.item();
}

double Trainer::train_step() {
  const auto start = std::chrono::steady_clock::now();
  const BatchIndices indices =
      batch_indices(settings_, steps_done_, train_.image_count(), train_.captions_per_image);
  std::vector<std::string> captions;
  for (const std::int64_t c : indices.captions)
    captions.push_back(train_.captions[static_cast<std::size_t>(c)]);
  const CaptionBatch batch = vocabulary_.batch(captions);
  const Tensor features = ng::index_select(
      train_.images, 0,
      ng::from_vector(indices.images, {static_cast<std::int64_t>(indices.images.size())}));
  const double loss =
      step({batch.tokens.to(device_), batch.lengths.to(device_)}, features.to(device_));
  NG_CHECK(std::isfinite(loss), "order_embedding", "the loss became ", loss, " at step ",
           steps_done_ + 1);
  ++steps_done_;
  since_validation_.add(loss, start);
  return loss;
}

const ValidationRecord& Trainer::validate() {
  const double seconds_before = history_.empty() ? 0.0 : history_.back().seconds;
  history_.push_back({.step = steps_done_,
                      .seconds = seconds_before + since_validation_.seconds,
                      .train_loss = since_validation_.mean_loss(),
                      .dev = evaluate_retrieval(*model_, vocabulary_, dev_, device_)});
  since_validation_ = {};
  return history_.back();
}

examples::RunState Trainer::run_state() {
  return {*model_, *adam_, generator_, "order_embedding", describe(model_->config())};
}

void Trainer::save_state(const std::string& path) {
  examples::save_run_state(path, run_state(), steps_done_, history_csv(history_));
}

void Trainer::load_state(const std::string& path) {
  const examples::LoadedRunState loaded = examples::load_run_state(path, run_state());
  std::vector<ValidationRecord> history = parse_history_csv(loaded.history);
  examples::check_validated_state(path, "order_embedding", loaded.steps, history, settings_.steps);
  steps_done_ = loaded.steps;
  history_ = std::move(history);
}

}  // namespace order_embedding
