#include "data/retrieval_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.h"

namespace normgrad::data {

Ranks retrieval_ranks(const Tensor& errors, std::int64_t captions_per_image) {
  NG_CHECK(errors.defined() && errors.dim() == 2 && is_floating(errors.dtype()), "retrieval_ranks",
           "errors must be a floating [captions, images] matrix, got ",
           errors.defined() ? errors.shape() : Shape{});
  const std::int64_t captions = errors.size(0), images = errors.size(1);
  NG_CHECK(captions_per_image >= 1 && images >= 1 && captions == captions_per_image * images,
           "retrieval_ranks", "errors ", errors.shape(), " must have ", captions_per_image,
           " captions per image, ", captions_per_image, " x ", images, " rows");
  const Tensor host = errors.to(Device::cpu()).to(DType::Float64).contiguous();
  const double* e = host.data_ptr<double>();
  const auto error = [&](std::int64_t caption, std::int64_t image) {
    return e[caption * images + image];
  };
  Ranks ranks;
  ranks.image.resize(static_cast<std::size_t>(captions));
  for (std::int64_t c = 0; c < captions; ++c) {
    const std::int64_t right = c / captions_per_image;
    std::int64_t before = 0;
    for (std::int64_t i = 0; i < images; ++i)
      before += i != right && !(error(c, i) > error(c, right));  // a NaN counts as before
    ranks.image[static_cast<std::size_t>(c)] = before;
  }
  ranks.caption.resize(static_cast<std::size_t>(images));
  for (std::int64_t i = 0; i < images; ++i) {
    const std::int64_t first = i * captions_per_image;
    double best = std::numeric_limits<double>::infinity();
    for (std::int64_t c = first; c < first + captions_per_image; ++c)
      if (!(error(c, i) >= best)) best = error(c, i);
    std::int64_t before = 0;
    for (std::int64_t c = 0; c < captions; ++c)
      before += (c < first || c >= first + captions_per_image) && !(error(c, i) > best);
    ranks.caption[static_cast<std::size_t>(i)] = before;
  }
  return ranks;
}

RankingMetrics ranking_metrics(const std::vector<std::int64_t>& ranks) {
  NG_CHECK(!ranks.empty(), "ranking_metrics", "needs at least one query");
  RankingMetrics metrics;
  const auto queries = static_cast<double>(ranks.size());
  for (std::size_t k = 0; k < kRecallRanks.size(); ++k)
    metrics.recall_at[k] =
        100.0 *
        static_cast<double>(std::count_if(ranks.begin(), ranks.end(),
                                          [&](std::int64_t r) { return r < kRecallRanks[k]; })) /
        queries;
  double sum = 0;
  for (const std::int64_t r : ranks) sum += static_cast<double>(r);
  metrics.mean_rank = sum / queries + 1;
  std::vector<std::int64_t> sorted = ranks;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t middle = sorted.size() / 2;
  const double median = sorted.size() % 2 == 1
                            ? static_cast<double>(sorted[middle])
                            : 0.5 * static_cast<double>(sorted[middle - 1] + sorted[middle]);
  metrics.median_rank = std::floor(median) + 1;
  return metrics;
}

RetrievalScores retrieval_scores(const Tensor& errors, std::int64_t captions_per_image) {
  const Ranks ranks = retrieval_ranks(errors, captions_per_image);
  return {.caption = ranking_metrics(ranks.caption), .image = ranking_metrics(ranks.image)};
}

RetrievalScores average_scores(const std::vector<RetrievalScores>& folds) {
  NG_CHECK(!folds.empty(), "average_scores", "needs at least one fold");
  RetrievalScores mean;
  const auto add = [](RankingMetrics& to, const RankingMetrics& from, double weight) {
    for (std::size_t k = 0; k < to.recall_at.size(); ++k)
      to.recall_at[k] += weight * from.recall_at[k];
    to.median_rank += weight * from.median_rank;
    to.mean_rank += weight * from.mean_rank;
  };
  const double weight = 1.0 / static_cast<double>(folds.size());
  for (const RetrievalScores& fold : folds) {
    add(mean.caption, fold.caption, weight);
    add(mean.image, fold.image, weight);
  }
  return mean;
}

double image_recall_sum(const RetrievalScores& scores) {
  return scores.image.recall_at[0] + scores.image.recall_at[1] + scores.image.recall_at[2];
}

}  // namespace normgrad::data
