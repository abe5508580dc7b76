// BatchNorm: the fused op (batch_norm, backends/cpu/batch_norm.cpp) against its composed
// twin and finite differences, the running estimates against values worked out by hand,
// evaluation with the running estimates, results identical for 1 and 2 threads, the
// modules, and the errors.

#include <cmath>
#include <functional>
#include <vector>

#include "helpers.h"

using namespace normgrad;
using testing::all_close;
using testing::leaf;
using Inputs = std::vector<Tensor>;

namespace {

const Tensor none;

// What one run of a BatchNorm gives: y, the gradients of sum(y * dy), the running estimates.
struct Run {
  Tensor y, dx, dgain, dbias, running_mean, running_var;
};

using BatchNormFunction =
    std::function<Tensor(const Tensor& x, const Tensor& gain, const Tensor& bias,
                         const Tensor& running_mean, const Tensor& running_var, bool training)>;

const BatchNormFunction fused = [](const Tensor& x, const Tensor& g, const Tensor& b,
                                   const Tensor& rm, const Tensor& rv, bool training) {
  return batch_norm(x, g, b, rm, rv, training, 0.1, 1e-5);
};
const BatchNormFunction composed = [](const Tensor& x, const Tensor& g, const Tensor& b,
                                      const Tensor& rm, const Tensor& rv, bool training) {
  return nn::batch_norm_composed(x, g, b, rm, rv, training, 0.1, 1e-5);
};

// The inputs of one comparison. With `permuted`, x is a non-contiguous view: [N, C] is the
// transpose of a [C, N] tensor, and a larger x is channels-last in memory.
struct Case {
  Tensor x, gain, bias, running_mean, running_var, dy;
};

Case make_case(const Shape& shape, DType dtype, bool affine, bool permuted) {
  Generator generator(29);
  const TensorOptions options{.dtype = dtype};
  const std::int64_t rank = static_cast<std::int64_t>(shape.size()), channels = shape[1];
  Case c;
  if (!permuted) {
    c.x = randn(shape, generator, options) * 3.0 + 0.5;
  } else if (rank == 2) {
    c.x = (randn({channels, shape[0]}, generator, options) * 3.0 + 0.5).t();
  } else {
    Shape stored{shape[0]};
    std::vector<std::int64_t> order{0, rank - 1};
    for (std::int64_t d = 2; d < rank; ++d) {
      stored.push_back(shape[d]);
      order.push_back(d - 1);
    }
    stored.push_back(channels);
    c.x = (randn(stored, generator, options) * 3.0 + 0.5).permute(order);
  }
  if (affine) {
    c.gain = randn({channels}, generator, options);
    c.bias = randn({channels}, generator, options);
  }
  c.running_mean = randn({channels}, generator, options);
  c.running_var = rand({channels}, generator, options) + 0.5;
  c.dy = randn(shape, generator, options);
  return c;
}

Run run(const BatchNormFunction& function, const Case& c, bool training) {
  Run r;
  const Tensor x = c.x.detach().requires_grad_();
  Tensor g, b;
  if (c.gain.defined()) g = c.gain.clone().requires_grad_();
  if (c.bias.defined()) b = c.bias.clone().requires_grad_();
  r.running_mean = c.running_mean.clone();
  r.running_var = c.running_var.clone();
  r.y = function(x, g, b, r.running_mean, r.running_var, training);
  (r.y * c.dy).sum().backward();
  r.dx = x.grad();
  if (g.defined()) r.dgain = g.grad();
  if (b.defined()) r.dbias = b.grad();
  return r;
}

void check_same(const Tensor& a, const Tensor& b, double rtol, double atol) {
  CHECK(a.defined() == b.defined());
  if (a.defined() && b.defined()) CHECK(all_close(a, b, rtol, atol));
}

}  // namespace

TEST_CASE("batch_norm on values worked out by hand: running estimates use the unbiased variance") {
  // [N = 3, C = 2]: channel 0 holds 1, 3, 5 (mean 3, biased variance 8/3, unbiased 4),
  // channel 1 holds 2, 6, 10 (mean 6, biased variance 32/3, unbiased 16).
  const Tensor x = tensor({{1, 2}, {3, 6}, {5, 10}}, {.dtype = DType::Float64});
  const double s0 = std::sqrt(8.0 / 3), s1 = std::sqrt(32.0 / 3);
  for (bool use_fused : {true, false}) {
    CAPTURE(use_fused);
    const auto function = use_fused ? batch_norm : nn::batch_norm_composed;
    Tensor rm = zeros({2}, {.dtype = DType::Float64}), rv = ones({2}, {.dtype = DType::Float64});
    const Tensor y = function(x, none, none, rm, rv, true, 0.1, 1e-5);
    CHECK(all_close(y, {-2 / s0, -4 / s1, 0, 0, 2 / s0, 4 / s1}, 1e-5));
    // running = 0.9 running + 0.1 batch, with variance 4 and 16, not 8/3 and 32/3.
    CHECK(all_close(rm, {0.3, 0.6}, 1e-12));
    CHECK(all_close(rv, {0.9 + 0.4, 0.9 + 1.6}, 1e-12));
    // A second step with momentum 0.5 from there.
    function(x, none, none, rm, rv, true, 0.5, 1e-5);
    CHECK(all_close(rm, {0.15 + 1.5, 0.3 + 3}, 1e-12));
    CHECK(all_close(rv, {0.65 + 2, 1.25 + 8}, 1e-12));
  }
  // [N = 2, C = 1, L = 2]: the variance is corrected by M / (M - 1) with M = N L = 4 values
  // (1, 2, 3, 6: mean 3, biased variance 3.5, unbiased 14/3), not by N / (N - 1).
  const Tensor maps = tensor({1, 2, 3, 6}, {.dtype = DType::Float64}).view({2, 1, 2});
  for (const auto& function : {fused, composed}) {
    Tensor rm = zeros({1}, {.dtype = DType::Float64}), rv = ones({1}, {.dtype = DType::Float64});
    function(maps, none, none, rm, rv, true);
    CHECK(all_close(rm, {0.3}, 1e-12));
    CHECK(all_close(rv, {0.9 + 1.4 / 3}, 1e-12));
  }
}

TEST_CASE("batch_norm in evaluation uses the running estimates and leaves them alone") {
  const Tensor x = tensor({{1, 2}, {3, 6}}, {.dtype = DType::Float64});
  const Tensor rm = tensor({1, -1}, {.dtype = DType::Float64});
  const Tensor rv = tensor({4, 0.25}, {.dtype = DType::Float64});
  const Tensor g = tensor({2, 1}, {.dtype = DType::Float64});
  const Tensor b = tensor({0, 10}, {.dtype = DType::Float64});
  // y = g (x - rm) / sqrt(rv) + b, eps 0
  const std::vector<double> expected{0, 16, 2, 24};
  for (const auto& function : {batch_norm, nn::batch_norm_composed}) {
    const Tensor running_mean = rm.clone(), running_var = rv.clone();
    CHECK(all_close(function(x, g, b, running_mean, running_var, false, 0.1, 0.0), expected));
    CHECK(all_close(running_mean, rm, 0, 0));
    CHECK(all_close(running_var, rv, 0, 0));
  }
}

TEST_CASE("fused batch_norm matches its composed twin: values, gradients, running estimates") {
  const std::vector<Shape> shapes{
      {5, 3},         {7, 13},      {3000, 17},  // [N, C]; the last in 2 blocks
      {4, 3, 5},      {3, 2, 40},                // [N, C, L]: columns, planes
      {2, 3, 4, 5},   {3, 4, 9, 7},              // [N, C, H, W]: columns, planes
      {40, 16, 9, 9},                            // planes in 2 blocks
      {2, 2, 5000},                              // maps cut into pieces
      {1, 2, 3, 3},                              // one sample
  };
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const double rtol = dtype == DType::Float32 ? 2e-5 : 1e-10;
    for (const Shape& shape : shapes)
      for (bool affine : {true, false})
        for (bool permuted : {false, true})
          for (bool training : {true, false}) {
            CAPTURE(dtype);
            CAPTURE(shape);
            CAPTURE(affine);
            CAPTURE(permuted);
            CAPTURE(training);
            const Case c = make_case(shape, dtype, affine, permuted);
            CHECK(c.x.is_contiguous() == !permuted);
            const Run a = run(fused, c, training), b = run(composed, c, training);
            check_same(a.y, b.y, rtol, rtol);
            check_same(a.dx, b.dx, rtol * 10, rtol * 10);
            check_same(a.dgain, b.dgain, rtol * 10, rtol * 10);
            check_same(a.dbias, b.dbias, rtol * 10, rtol * 10);
            check_same(a.running_mean, b.running_mean, rtol, rtol);
            check_same(a.running_var, b.running_var, rtol, rtol);
            if (!training) CHECK(all_close(a.running_mean, c.running_mean, 0, 0));
          }
  }
}

TEST_CASE("gradcheck: batch_norm in training and evaluation, with and without gain and bias") {
  const std::vector<Shape> shapes{{4, 3}, {3, 2, 4}, {2, 3, 2, 3}, {2, 2, 40}};
  for (const Shape& shape : shapes) {
    CAPTURE(shape);
    const std::int64_t channels = shape[1];
    const Tensor x = leaf(shape, 1, 2.0), g = leaf({channels}, 2), b = leaf({channels}, 3);
    CHECK_GRADIENTS(
        [](const Inputs& in) { return batch_norm(in[0], in[1], in[2], none, none, true); },
        {x, g, b});
    CHECK_GRADIENTS(
        [](const Inputs& in) { return batch_norm(in[0], none, none, none, none, true); }, {x});
    CHECK_GRADIENTS(
        [](const Inputs& in) {
          return batch_norm(in[0], in[1], none, none, none, true, 0.1, 1e-6);
        },
        {x, g});
    // Evaluation: an affine map of x with fixed statistics.
    const Tensor rm = leaf({channels}, 4).detach();
    const Tensor rv = (leaf({channels}, 5).detach().square() + 0.5);
    CHECK_GRADIENTS(
        [&](const Inputs& in) { return batch_norm(in[0], in[1], in[2], rm, rv, false); },
        {x, g, b});
  }
  // A non-contiguous input.
  CHECK_GRADIENTS(
      [](const Inputs& in) { return batch_norm(in[0].t(), in[1], none, none, none, true); },
      {leaf({3, 5}, 6), leaf({3}, 7)});
}

TEST_CASE("batch_norm keeps its precision for channels with a large mean") {
  // The reference sees the same float32 values in float64: what is measured is the kernel's
  // arithmetic, which must neither cancel (E[x^2] - E[x]^2) nor lose the mean's tail.
  Generator generator(3);
  for (double offset : {1e3, 1e5, 1e6}) {
    CAPTURE(offset);
    const Tensor big = (randn({64, 3, 8, 8}, generator, {.dtype = DType::Float64}) * 1e-1 + offset)
                           .to(DType::Float32);
    const Tensor dy = randn(big.shape(), generator);
    const Tensor x32 = big.detach().requires_grad_();
    const Tensor x64 = big.to(DType::Float64).detach().requires_grad_();
    const Tensor y32 = batch_norm(x32, none, none, none, none, true);
    const Tensor y64 = nn::batch_norm_composed(x64, none, none, none, none, true, 0.1, 1e-5);
    (y32 * dy).sum().backward();
    (y64 * dy.to(DType::Float64)).sum().backward();
    CHECK(all_close(y32.to(DType::Float64), y64, 1e-5, 1e-5));
    CHECK(all_close(x32.grad().to(DType::Float64), x64.grad(), 1e-4, 1e-4));
  }
}

TEST_CASE("batch_norm: identical results for 1 and 2 threads") {
  const int threads = get_num_threads();
  // Rows of C values, columns with S = 16, and planes; each large enough to be split.
  const std::vector<Shape> shapes{{4096, 33}, {512, 64, 4, 4}, {64, 16, 8, 8}};
  for (const Shape& shape : shapes) {
    CAPTURE(shape);
    const Case c = make_case(shape, DType::Float32, true, false);
    std::vector<std::vector<float>> results[2];
    for (int t : {1, 2}) {
      set_num_threads(t);
      const Run r = run(fused, c, true);
      results[t - 1] = {r.y.to_vector<float>(),
                        r.dx.to_vector<float>(),
                        r.dgain.to_vector<float>(),
                        r.dbias.to_vector<float>(),
                        r.running_mean.to_vector<float>(),
                        r.running_var.to_vector<float>()};
    }
    set_num_threads(threads);
    CHECK(results[0] == results[1]);
    // And they are the right results.
    const Run reference = run(composed, c, true);
    CHECK(all_close(reference.dgain,
                    std::vector<double>(results[0][2].begin(), results[0][2].end()), 1e-3, 1e-3));
  }
}

TEST_CASE("BatchNorm1d and BatchNorm2d: parameters, buffers, modes") {
  nn::BatchNorm2d norm(3);
  CHECK(norm.type_name() == "BatchNorm2d");
  CHECK(norm.num_features() == 3);
  CHECK(norm.named_parameters().size() == 2);
  CHECK(norm.gain.to_vector<float>() == std::vector<float>(3, 1.0f));
  CHECK(norm.bias.to_vector<float>() == std::vector<float>(3, 0.0f));
  const nn::StateDict state = norm.state_dict();
  CHECK(state.count("running_mean") == 1);
  CHECK(state.count("running_var") == 1);
  CHECK(norm.running_mean.to_vector<float>() == std::vector<float>(3, 0.0f));
  CHECK(norm.running_var.to_vector<float>() == std::vector<float>(3, 1.0f));
  CHECK_FALSE(norm.running_mean.requires_grad());

  Generator generator(5);
  const Tensor x = randn({4, 3, 2, 2}, generator) * 2.0 + 1.0;
  Tensor rm = zeros({3}), rv = ones({3});
  const Tensor expected = nn::batch_norm_composed(x, none, none, rm, rv, true, 0.1, 1e-5);
  CHECK(all_close(norm.forward(x), expected, 1e-5, 1e-5));
  CHECK(all_close(norm.running_mean, rm, 1e-6, 1e-6));  // updated in training
  CHECK(all_close(norm.running_var, rv, 1e-6, 1e-6));
  CHECK_FALSE(all_close(norm.running_var, std::vector<double>(3, 1.0)));

  norm.eval();
  const Tensor before = norm.running_mean.clone();
  const Tensor eval_expected = nn::batch_norm_composed(x, none, none, rm, rv, false, 0.1, 1e-5);
  CHECK(all_close(norm.forward(x), eval_expected, 1e-5, 1e-5));
  CHECK(all_close(norm.running_mean, before, 0, 0));  // untouched in evaluation

  nn::BatchNorm1d plain(3, {.eps = 1e-6, .affine = false, .track_running_stats = false});
  CHECK(plain.type_name() == "BatchNorm1d");
  CHECK(plain.named_parameters().empty());
  CHECK(plain.named_buffers().empty());
  plain.eval();  // no running estimates: the batch's statistics in evaluation too
  const Tensor rows = randn({6, 3}, generator);
  CHECK(all_close(plain.forward(rows),
                  nn::batch_norm_composed(rows, none, none, none, none, true, 0.1, 1e-6), 1e-5,
                  1e-5));
  nn::BatchNorm1d sequences(3, {.dtype = DType::Float64});
  const Tensor x3 = leaf({2, 3, 5});
  sequences.forward(x3).sum().backward();
  CHECK(x3.grad().defined());
  CHECK(sequences.gain.grad().defined());
}

TEST_CASE("batch_norm refuses bad arguments") {
  CHECK_ERROR(batch_norm(zeros({1, 3}), none, none, none, none, true), "batch_norm",
              "more than one value per channel", "[1, 3]");
  CHECK_ERROR(batch_norm(zeros({1, 3, 1, 1}), none, none, none, none, true), "batch_norm",
              "[1, 3, 1, 1]");
  CHECK_ERROR(batch_norm(zeros({2, 3}), zeros({4}), none, none, none, true), "batch_norm",
              "gain", "[3]", "[4]");
  CHECK_ERROR(
      batch_norm(zeros({2, 3}), none, zeros({3}, {.dtype = DType::Float64}), none, none, true),
      "batch_norm", "float64");
  CHECK_ERROR(batch_norm(zeros({2, 3}, {.dtype = DType::Int64}), none, none, none, none, true),
              "batch_norm", "int64");
  CHECK_ERROR(batch_norm(zeros({3}), none, none, none, none, true), "batch_norm", "[N, C, ...]",
              "[3]");
  CHECK_ERROR(batch_norm(zeros({2, 3}), none, none, none, none, false), "batch_norm",
              "running_mean");
  CHECK_ERROR(batch_norm(zeros({2, 3}), none, none, zeros({3}), none, true), "batch_norm",
              "both or neither");
  CHECK_ERROR(batch_norm(zeros({2, 3}), none, none, zeros({2}), ones({2}), true), "batch_norm",
              "running_mean", "[2]");
  CHECK_ERROR(batch_norm(zeros({2, 3}), none, none, none, none, true, 1.5), "batch_norm",
              "momentum");
  // Running estimates have the input's dtype, or float32 for bfloat16 input (mixed precision).
  const TensorOptions f64{.dtype = DType::Float64};
  CHECK_ERROR(batch_norm(zeros({2, 3}), none, none, zeros({3}, f64), ones({3}, f64), true),
              "batch_norm", "running_mean is float64", "input is float32");
  const TensorOptions bf16{.dtype = DType::BFloat16};
  CHECK_ERROR(
      batch_norm(zeros({2, 3}, bf16), none, none, zeros({3}, f64), ones({3}, f64), true),
      "batch_norm", "running_mean is float64", "input is bfloat16");
  CHECK(batch_norm(randn({4, 3}).to(DType::BFloat16), none, none, zeros({3}), ones({3}), true)
            .dtype() == DType::BFloat16);
}

TEST_CASE("BatchNorm1d and BatchNorm2d refuse bad inputs and options") {
  CHECK_ERROR(nn::BatchNorm2d(3).forward(zeros({2, 3, 4})), "BatchNorm2d", "[N, C, H, W]",
              "[2, 3, 4]");
  CHECK_ERROR(nn::BatchNorm1d(3).forward(zeros({2, 3, 4, 5})), "BatchNorm1d", "[N, C, L]");
  CHECK_ERROR(nn::BatchNorm1d(3).forward(zeros({2, 4})), "BatchNorm1d", "3 channels", "[2, 4]");
  CHECK_ERROR(nn::BatchNorm1d(3).forward(zeros({2, 3}, {.dtype = DType::Float64})), "BatchNorm1d",
              "float32", "float64");
  CHECK_ERROR(nn::BatchNorm1d(3).forward(zeros({1, 3})), "batch_norm", "[1, 3]");
  CHECK_ERROR(nn::BatchNorm1d(0), "BatchNorm1d", "num_features");
  CHECK_ERROR(nn::BatchNorm2d(3, {.momentum = 2}), "BatchNorm2d", "momentum");
}
