#pragma once
// Ranking metrics of image-caption retrieval, as the order-embedding paper and the RMSNorm
// paper's Table 7 report them, from a matrix of errors (lower is a better match):
//
//   errors [C, I]: caption c against image i, with C = k I and captions k i ... k i + k - 1
//                  describing image i (COCO has k = 5: captions 5i..5i+4 are image i's)
//
//   caption retrieval (an image is the query; "Caption" in Table 7): the rank of the best-placed
//       of the image's k captions among all C captions;
//   image retrieval (a caption is the query; "Image" in Table 7): the rank of its image among
//       all I images.
//
// Ranks start at 1. A wrong candidate whose error ties the right one's counts as placed before
// it, so a model that gives every pair the same error ranks last, not first. R@K is the
// percentage of queries whose rank is at most K; the mean and median ranks are over queries
// (the median as the original code takes it: floor of the median 0-based rank, plus 1).
//
//   data::RetrievalScores scores = data::retrieval_scores(errors, 5);
//   scores.image.recall_at[0];   // image retrieval R@1, in percent

#include <array>
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace normgrad::data {

struct RankingMetrics {
  std::array<double, 3> recall_at{};  // R@1, R@5, R@10, in percent
  double median_rank = 0;
  double mean_rank = 0;
};

struct RetrievalScores {
  RankingMetrics caption;  // caption retrieval: images are the queries
  RankingMetrics image;    // image retrieval: captions are the queries
};

inline constexpr std::array<std::int64_t, 3> kRecallRanks = {1, 5, 10};

// The 0-based ranks: for each image, of its best-placed caption among all captions; for each
// caption, of its image among all images. errors: [k I, I], any floating dtype and device.
struct Ranks {
  std::vector<std::int64_t> caption;  // [I]
  std::vector<std::int64_t> image;    // [k I]
};
Ranks retrieval_ranks(const Tensor& errors, std::int64_t captions_per_image);

RankingMetrics ranking_metrics(const std::vector<std::int64_t>& ranks);
RetrievalScores retrieval_scores(const Tensor& errors, std::int64_t captions_per_image);

// The mean of every metric over folds (the paper averages five 1000-image test folds).
RetrievalScores average_scores(const std::vector<RetrievalScores>& folds);

// Image retrieval's R@1 + R@5 + R@10: what the original code keeps the best model by.
double image_recall_sum(const RetrievalScores& scores);

}  // namespace normgrad::data
