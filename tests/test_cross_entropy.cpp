// The fused cross-entropy against its composed twin and finite differences, with ignore_index,
// label smoothing and each reduction; nll_loss; and bad input; on a GPU, the CUDA kernels
// against the CPU's on contiguous and transposed logits, nll_loss, and a bad target, which is
// an Error on the GPU as on the CPU.

#include <cmath>

#include "cuda_parity.h"
#include "helpers.h"

using namespace normgrad;
using testing::all_close;
using testing::leaf;
using Inputs = std::vector<Tensor>;

namespace {

Tensor targets(std::vector<std::int64_t> values, Shape shape) { return from_vector(values, shape); }

}  // namespace

TEST_CASE("cross_entropy: a value worked out by hand") {
  // Logits (0, ln 3): softmax (1/4, 3/4). Target 1: loss -ln(3/4).
  const Tensor logits = tensor({0.0, std::log(3.0)}, {.dtype = DType::Float64}).view({1, 2});
  CHECK(nn::cross_entropy(logits, targets({1}, {1})).item() == doctest::Approx(-std::log(0.75)));
  // Smoothing 0.5: q = (0.25, 0.75); loss = -(0.25 ln 1/4 + 0.75 ln 3/4).
  const double smoothed = -(0.25 * std::log(0.25) + 0.75 * std::log(0.75));
  CHECK(nn::cross_entropy(logits, targets({1}, {1}), {.label_smoothing = 0.5}).item() ==
        doctest::Approx(smoothed));
}

TEST_CASE("cross_entropy: fused matches the composed twin, forward and backward") {
  Generator generator(4);
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const double rtol = dtype == DType::Float32 ? 1e-5 : 1e-12;
    for (std::int64_t classes : {1, 7, 1000}) {
      for (const nn::CrossEntropyOptions options :
           {nn::CrossEntropyOptions{},
            nn::CrossEntropyOptions{.ignore_index = 1, .label_smoothing = 0.1},
            nn::CrossEntropyOptions{.reduction = nn::Reduction::Sum},
            nn::CrossEntropyOptions{.label_smoothing = 0.2, .reduction = nn::Reduction::None}}) {
        CAPTURE(classes);
        const Tensor x0 = randn({3, 4, classes}, generator, {.dtype = dtype}) * 3.0;
        const Tensor t = randint(0, classes, {3, 4}, generator);
        Tensor x[2] = {x0.clone().requires_grad_(), x0.clone().requires_grad_()};
        const Tensor fused = nn::cross_entropy(x[0], t, options);
        const Tensor composed = nn::cross_entropy_composed(x[1], t, options);
        CHECK(all_close(fused, composed, rtol, rtol));
        const Tensor dy = randn(fused.shape(), generator, {.dtype = dtype});
        (fused * dy).sum().backward();
        (composed * dy).sum().backward();
        CHECK(all_close(x[0].grad(), x[1].grad(), rtol * 10, rtol * 10));
      }
    }
  }
}

TEST_CASE("cross_entropy: gradients match finite differences") {
  const Tensor t = targets({2, 0, 4, 1, -100}, {5});
  CHECK_GRADIENTS([&](const Inputs& in) { return nn::cross_entropy(in[0], t); }, {leaf({5, 6}, 1)});
  CHECK_GRADIENTS(
      [&](const Inputs& in) {
        return nn::cross_entropy(in[0], t,
                                 {.label_smoothing = 0.3, .reduction = nn::Reduction::None});
      },
      {leaf({5, 6}, 2)});
  // A non-contiguous view of logits.
  CHECK_GRADIENTS([&](const Inputs& in) { return nn::cross_entropy(in[0].t(), t); },
                  {leaf({6, 5}, 3)});
}

TEST_CASE("cross_entropy: ignored rows count for nothing, and the mean skips them") {
  Generator generator(5);
  const Tensor x = randn({4, 3}, generator, {.dtype = DType::Float64}).requires_grad_();
  const Tensor t = targets({1, -100, 2, -100}, {4});
  const Tensor loss = nn::cross_entropy(x, t);
  const Tensor kept_rows = index_select(x, 0, targets({0, 2}, {2}));
  CHECK(loss.item() == doctest::Approx(nn::cross_entropy(kept_rows, targets({1, 2}, {2})).item()));
  loss.backward();
  CHECK(all_close(x.grad().select(0, 1), std::vector<double>(3, 0.0), 0, 0));
  CHECK(all_close(x.grad().select(0, 3), std::vector<double>(3, 0.0), 0, 0));
  CHECK(std::isnan(nn::cross_entropy(x, targets({-100, -100, -100, -100}, {4})).item()));
}

TEST_CASE("nll_loss of log_softmax equals cross_entropy") {
  Generator generator(6);
  const Tensor x = randn({5, 4}, generator, {.dtype = DType::Float64});
  const Tensor t = targets({3, 0, -100, 1, 2}, {5});
  CHECK(nn::nll_loss(x.log_softmax(-1), t).item() ==
        doctest::Approx(nn::cross_entropy(x, t).item()).epsilon(1e-12));
  CHECK_ERROR(nn::nll_loss(x, targets({3, 0, 9, 1, 2}, {5})), "nll_loss", "[0, 4)");
  CHECK_ERROR(nn::nll_loss(x, t, {.label_smoothing = 0.1}), "nll_loss", "label smoothing");
}

TEST_CASE("cross_entropy refuses bad targets, shapes and options") {
  const Tensor x = zeros({3, 4});
  CHECK_ERROR(nn::cross_entropy(x, targets({0, 4, 1}, {3})), "cross_entropy", "target 4", "row 1",
              "[0, 4)");
  CHECK_ERROR(nn::cross_entropy(x, targets({0, 1}, {2})), "cross_entropy", "[2]", "[3, 4]");
  CHECK_ERROR(nn::cross_entropy(x, zeros({3})), "cross_entropy", "int64");
  CHECK_ERROR(nn::cross_entropy(x, targets({0, 1, 2}, {3}), {.label_smoothing = 2}),
              "cross_entropy", "label_smoothing");
}

// ---- on a GPU: CPU against CUDA ----------------------------------------------------------------

// The CUDA kernels against the CPU's, values and gradients: a log-sum-exp per row, summed over
// rows for the reductions.

using testing::indices;
using testing::normal;
using testing::parity_mismatch;
using testing::summed;
using testing::Tolerance;

TEST_CASE("cuda parity: cross_entropy with label smoothing, ignore_index and each reduction") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    const bool f64 = dtype == DType::Float64;
    // Per row: lse - x_t with |x| up to about 15, a few ulps of that; the Mean and Sum
    // reductions add 12 rows.
    const Tolerance values = f64 ? Tolerance{1e-12, 1e-12} : Tolerance{1e-5, 1e-5};
    // dx = dloss (exp(x - lse) - q): an exp and a subtraction per value.
    const Tolerance gradients = f64 ? Tolerance{1e-12, 1e-14} : Tolerance{1e-5, 1e-6};
    for (const std::int64_t classes : {1, 7, 1000}) {
      for (const nn::CrossEntropyOptions options :
           {nn::CrossEntropyOptions{},
            nn::CrossEntropyOptions{.ignore_index = 1, .label_smoothing = 0.1},
            nn::CrossEntropyOptions{.reduction = nn::Reduction::Sum},
            nn::CrossEntropyOptions{.label_smoothing = 0.2, .reduction = nn::Reduction::None}}) {
        INFO(dtype << ", " << classes << " classes, smoothing " << options.label_smoothing
                   << ", ignore_index " << options.ignore_index);
        const Tensor logits = normal({3, 4, classes}, 9, dtype, 3.0);
        Tensor targets = indices(0, classes, {3, 4}, 10);
        targets.narrow(1, 2, 1).fill_(static_cast<double>(options.ignore_index));  // some ignored
        CHECK_NO_MISMATCH(parity_mismatch(
            [options](const Inputs& in) { return nn::cross_entropy(in[0], in[1], options); },
            {logits, targets}, values, gradients));
        // Logits as a transposed view: classes strided.
        CHECK_NO_MISMATCH(parity_mismatch(
            [options](const Inputs& in) {
              return nn::cross_entropy(in[0].transpose(0, 2), in[1], options);
            },
            {normal({classes, 4, 3}, 11, dtype, 3.0), targets}, values, gradients));
        CHECK_NO_MISMATCH(parity_mismatch(
            [options](const Inputs& in) {
              nn::CrossEntropyOptions unsmoothed = options;
              unsmoothed.label_smoothing = 0;
              return nn::nll_loss(in[0].log_softmax(-1), in[1], unsmoothed);
            },
            {logits, targets}, values, summed(dtype, static_cast<double>(classes))));
      }
    }
  }
}

TEST_CASE("cuda parity: cross_entropy refuses a bad target on the GPU as on the CPU") {
  SKIP_PARITY_WITHOUT_CUDA();
  const Device gpu = testing::parity_device();
  const Tensor logits = zeros({3, 4});
  const Tensor targets = tensor({0, 4, 1}, {.dtype = DType::Int64});  // row 1 is out of range
  CHECK_ERROR(nn::cross_entropy(logits, targets), "cross_entropy", "target 4", "row 1");
  CHECK_ERROR(nn::cross_entropy(logits.to(gpu), targets.to(gpu)), "cross_entropy", "target 4",
              "row 1");
  const Tensor negative = tensor({0, 1, -3}, {.dtype = DType::Int64});  // not the ignore_index
  CHECK_ERROR(nn::cross_entropy(logits.to(gpu), negative.to(gpu)), "cross_entropy", "target -3",
              "row 2");
  // The device stays usable after the error.
  const Tensor fine = tensor({0, 3, 1}, {.dtype = DType::Int64});
  CHECK(nn::cross_entropy(logits.to(gpu), fine.to(gpu)).item() == doctest::Approx(std::log(4.0)));
}
