// Image-caption retrieval: the ranking metrics (data/retrieval_metrics.h) on cases worked out by
// hand, and the order-embedding losses (nn/ranking_losses.h) by hand and against finite
// differences.

#include "helpers.h"

using namespace normgrad;
using testing::all_close;
using testing::leaf;
using Inputs = std::vector<Tensor>;

namespace {

// Three images with two captions each: captions 2i and 2i+1 describe image i.
Tensor hand_errors() {
  return tensor({{0.1, 0.5, 0.9},
                 {0.6, 0.2, 0.7},
                 {0.3, 0.3, 0.8},
                 {0.9, 0.4, 0.1},
                 {0.5, 0.6, 0.2},
                 {0.2, 0.1, 0.9}},
                {.dtype = DType::Float64});
}

}  // namespace

TEST_CASE("retrieval_ranks: worked out by hand, ties counted against the right answer") {
  const data::Ranks ranks = data::retrieval_ranks(hand_errors(), 2);
  // Caption 1's image 0 (0.6) is beaten by image 1 (0.2); caption 2's image 1 ties image 0
  // (0.3), and the tie counts against it; caption 5's image 2 (0.9) is beaten by both others.
  CHECK(ranks.image == std::vector<std::int64_t>{0, 1, 1, 1, 0, 2});
  // Image 1's best caption is caption 2 (0.3), beaten by captions 1 (0.2) and 5 (0.1); image
  // 2's best is caption 4 (0.2), beaten by caption 3 (0.1).
  CHECK(ranks.caption == std::vector<std::int64_t>{0, 2, 1});
}

TEST_CASE("retrieval_scores: recall at 1, 5, 10 and the mean and median ranks by hand") {
  const data::RetrievalScores scores = data::retrieval_scores(hand_errors(), 2);
  CHECK(scores.image.recall_at[0] == doctest::Approx(100.0 * 2 / 6));
  CHECK(scores.image.recall_at[1] == 100.0);
  CHECK(scores.image.recall_at[2] == 100.0);
  CHECK(scores.image.mean_rank == doctest::Approx(1.0 + 5.0 / 6));  // 0-based ranks sum to 5
  CHECK(scores.image.median_rank == 2.0);                           // sorted 0 0 1 1 1 2
  CHECK(scores.caption.recall_at[0] == doctest::Approx(100.0 / 3));
  CHECK(scores.caption.mean_rank == doctest::Approx(2.0));
  CHECK(scores.caption.median_rank == 2.0);
  CHECK(data::image_recall_sum(scores) == doctest::Approx(100.0 / 3 + 200.0));
}

TEST_CASE("retrieval_scores: R@5 and R@10 count ranks past 5, and a constant model ranks last") {
  // Twelve images, one caption each; caption c's own image is beaten by (c) others.
  const std::int64_t n = 12;
  std::vector<double> values(static_cast<std::size_t>(n * n), 0.0);
  for (std::int64_t c = 0; c < n; ++c)
    for (std::int64_t i = 0; i < n; ++i)
      values[static_cast<std::size_t>(c * n + i)] =
          i == c ? 1.0 : (((i - c + n) % n) <= c ? 0.5 : 2.0);
  const data::RetrievalScores scores = data::retrieval_scores(from_vector(values, {n, n}), 1);
  // Ranks 0..11: R@1 1/12, R@5 5/12, R@10 10/12; mean 5.5 + 1.
  CHECK(scores.image.recall_at[0] == doctest::Approx(100.0 / 12));
  CHECK(scores.image.recall_at[1] == doctest::Approx(500.0 / 12));
  CHECK(scores.image.recall_at[2] == doctest::Approx(1000.0 / 12));
  CHECK(scores.image.mean_rank == doctest::Approx(6.5));
  CHECK(scores.image.median_rank == 6.0);  // floor((5 + 6) / 2) + 1

  const data::RetrievalScores constant = data::retrieval_scores(zeros({10, 5}), 2);
  CHECK(constant.image.mean_rank == 5.0);    // behind all 4 other images
  CHECK(constant.caption.mean_rank == 9.0);  // behind all 8 other captions
  CHECK(constant.image.recall_at[0] == 0.0);
}

TEST_CASE("average_scores: the mean of every metric over folds") {
  const data::RetrievalScores hand = data::retrieval_scores(hand_errors(), 2);
  // A perfect fold: each caption's own image has error 0, the others 1.
  const Tensor perfect = tensor({{0.0, 1.0}, {1.0, 0.0}});
  const data::RetrievalScores best = data::retrieval_scores(perfect, 1);
  CHECK(best.image.recall_at[0] == 100.0);
  CHECK(best.caption.mean_rank == 1.0);
  const data::RetrievalScores mean = data::average_scores({hand, best});
  CHECK(mean.image.recall_at[0] == doctest::Approx((100.0 / 3 + 100.0) / 2));
  CHECK(mean.caption.mean_rank == doctest::Approx(1.5));
  CHECK(mean.image.median_rank == doctest::Approx(1.5));
}

TEST_CASE("retrieval metrics refuse matrices that do not fit") {
  CHECK_ERROR(data::retrieval_ranks(zeros({5, 2}), 2), "retrieval_ranks", "2 x 2");
  CHECK_ERROR(data::retrieval_ranks(zeros({4}), 1), "retrieval_ranks", "[captions, images]");
  CHECK_ERROR(data::retrieval_ranks(zeros({2, 2}, {.dtype = DType::Int64}), 1), "floating");
  CHECK_ERROR(data::ranking_metrics({}), "ranking_metrics", "at least one");
  CHECK_ERROR(data::average_scores({}), "average_scores", "at least one");
}

TEST_CASE("order_violations and contrastive_hinge_loss: worked out by hand") {
  const Tensor s = tensor({{0.2, 0.5}, {0.4, 0.1}}, {.dtype = DType::Float64});
  const Tensor v = tensor({{0.3, 0.4}, {0.0, 0.6}}, {.dtype = DType::Float64});
  // E(s, v) = sum max(0, s - v)^2: (0 + 0.1^2), (0.2^2 + 0); (0.1^2 + 0), (0.4^2 + 0).
  const Tensor errors = nn::order_violations(s, v);
  CHECK(all_close(errors, {0.01, 0.04, 0.01, 0.16}, 1e-12, 1e-15));
  // Margin 0.05. Wrong captions of image 0: 0.05 - 0.01 + 0.01; of image 1: 0.05 - 0.04 +
  // 0.16. Wrong images of caption 0: 0.05 - 0.04 + 0.01; of caption 1: 0.05 - 0.01 + 0.16.
  CHECK(nn::contrastive_hinge_loss(errors, 0.05).item() == doctest::Approx(0.44));
  // A wide enough gap costs nothing: right pairs at 0, wrong ones above the margin.
  const Tensor separated = tensor({{0.0, 1.0}, {1.0, 0.0}});
  CHECK(nn::contrastive_hinge_loss(separated, 0.05).item() == 0.0);
  CHECK(nn::contrastive_hinge_loss(full({1, 1}, 0.3), 0.05).item() == 0.0);  // no wrong pairs
}

TEST_CASE("order_violations and contrastive_hinge_loss: gradients match finite differences") {
  CHECK_GRADIENTS([](const Inputs& in) { return nn::order_violations(in[0], in[1]); },
                  {leaf({4, 5}, 1), leaf({3, 5}, 2)});
  CHECK_GRADIENTS([](const Inputs& in) { return nn::contrastive_hinge_loss(in[0], 0.5); },
                  {leaf({4, 4}, 3, 0.5)});
  // The whole loss, as training takes it: violations of absolute values, then the hinge.
  CHECK_GRADIENTS(
      [](const Inputs& in) {
        return nn::contrastive_hinge_loss(nn::order_violations(abs(in[0]), abs(in[1])), 0.05);
      },
      {leaf({3, 4}, 4, 0.3), leaf({3, 4}, 5, 0.3)});
}

TEST_CASE("ranking losses refuse shapes that do not fit") {
  CHECK_ERROR(nn::order_violations(zeros({2, 3}), zeros({2, 4})), "order_violations", "[2, 3]",
              "[2, 4]");
  CHECK_ERROR(nn::contrastive_hinge_loss(zeros({2, 3}), 0.05), "contrastive_hinge_loss", "square");
  CHECK_ERROR(nn::contrastive_hinge_loss(zeros({2, 2}), -1.0), "non-negative");
}
