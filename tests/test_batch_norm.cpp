// BatchNorm: the fused op (batch_norm, backends/cpu/batch_norm.cpp) against its composed
// twin and finite differences, the running estimates against values worked out by hand,
// evaluation with the running estimates, results identical for 1 and 2 threads, the
// modules, and the errors; on a GPU, the CUDA kernels against the CPU's in training and
// evaluation, the BatchNorm2d modules' running estimates included; and bfloat16 kernels that
// are the float32 ones, rounded once.

#include <cmath>
#include <functional>
#include <vector>

#include "bfloat16_twins.h"
#include "cuda_parity.h"
#include "helpers.h"
#include "module_gradcheck.h"

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

// ---- on a GPU: CPU against CUDA ----------------------------------------------------------------

// The CUDA kernels against the CPU's, values and gradients, and the running estimates.
// Tolerances: testing::norm_values and testing::norm_gradients, those of the fused normalisers
// (test_norm.cpp); the batch sums of dgain and dbias are reduced in another order on the GPU.

using testing::affine_gradients;
using testing::norm_inputs;
using testing::norm_values;
using testing::normal;
using testing::parity_mismatch;

TEST_CASE("cuda parity: batch_norm in training and evaluation, values and gradients") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    for (const Shape& shape :
         {Shape{8, 5}, Shape{6, 4, 7}, Shape{4, 3, 5, 6}, Shape{64, 16, 8, 8}}) {
      INFO(dtype << ", " << shape);
      const double per_channel = static_cast<double>(numel(shape) / shape[1]);
      const Inputs inputs = norm_inputs(shape, {shape[1]}, dtype);
      const std::vector<testing::Tolerance> gradients = affine_gradients(dtype, per_channel);
      // Training: the batch's statistics, functions of x.
      CHECK_NO_MISMATCH(parity_mismatch(
          [](const Inputs& in) { return batch_norm(in[0], in[1], in[2], none, none, true); },
          inputs, norm_values(dtype), gradients));
      CHECK_NO_MISMATCH(parity_mismatch(
          [](const Inputs& in) { return batch_norm(in[0], none, none, none, none, true); },
          {inputs[0]}, norm_values(dtype), gradients));
      // Evaluation: the running estimates, captured and moved to the inputs' device.
      const Tensor running_mean = normal({shape[1]}, 11, dtype);
      const Tensor running_var = testing::uniform({shape[1]}, 12, 0.5, 2.0, dtype);
      CHECK_NO_MISMATCH(parity_mismatch(
          [&](const Inputs& in) {
            return batch_norm(in[0], in[1], in[2], testing::on_device_of(running_mean, in[0]),
                                  testing::on_device_of(running_var, in[0]), false);
          },
          inputs, norm_values(dtype), gradients));
    }
  }
}

TEST_CASE("cuda parity: BatchNorm2d modules update the same running estimates") {
  SKIP_PARITY_WITHOUT_CUDA();
  const Device gpu = testing::parity_device();
  nn::BatchNorm2d host(6, {.momentum = 0.2}), device(6, {.momentum = 0.2});
  testing::randomise(host, 13);
  testing::randomise(device, 13);
  device.to(gpu);
  for (int step = 0; step < 3; ++step) {
    CAPTURE(step);
    const Tensor x =
        normal({5, 6, 7, 3}, 14 + static_cast<std::uint64_t>(step), DType::Float32, 2.0) + 1.0;
    CHECK_NO_MISMATCH(testing::mismatch(host.forward(x), device.forward(x.to(gpu)),
                                        norm_values(DType::Float32), "training output"));
    CHECK_NO_MISMATCH(testing::mismatch(host.running_mean, device.running_mean,
                                        testing::summed(DType::Float32, 105, 4.0), "running_mean"));
    CHECK_NO_MISMATCH(testing::mismatch(host.running_var, device.running_var,
                                        testing::summed(DType::Float32, 105, 16.0), "running_var"));
  }
  host.eval();
  device.eval();
  const Tensor x = normal({2, 6, 4, 4}, 20);
  CHECK_NO_MISMATCH(testing::mismatch(host.forward(x), device.forward(x.to(gpu)),
                                      norm_values(DType::Float32), "evaluation output"));
}

// ---- bfloat16 ----------------------------------------------------------------------------------

// bfloat16 operands give, bit for bit, the float32 kernel's results on the same values, rounded
// once, on the CPU and on a GPU where there is one; the GPU's kernels make no float32 copies.

using namespace testing::twins;
using testing::bits_mismatch;

TEST_CASE("bfloat16 kernels: batch norm is the float32 kernel, rounded once") {
  for (const Device device : devices_present()) {
    CAPTURE(device);
    Generator generator(49);
    backend::Backend& kernels = backend::backend_for(device);
    {
      INFO("batch norm over planes (S >= 32) and columns (S < 32), training and evaluation");
      for (const Shape& shape : {Shape{6, 4, 40}, Shape{9, 6, 5}}) {
        CAPTURE(shape);
        const std::int64_t channels = shape[1];
        const Twin x = input_twin(device, shape, generator, 2.0),
                   dy = input_twin(device, shape, generator);
        const Twin gain = input_twin(device, {channels}, generator),
                   bias = input_twin(device, {channels}, generator);
        const TensorOptions doubles{.dtype = DType::Float64, .device = device};
        Tensor statistics[2][3];  // [narrow][mean, variance, rstd]
        const Twin y = output_twin(device, shape), dx = output_twin(device, shape);
        const Twin dgain = output_twin(device, {channels}), dbias = output_twin(device, {channels});
        for (const bool training : {true, false}) {
          CAPTURE(training);
          for (const bool narrow : {true, false}) {
            Tensor(&s)[3] = statistics[narrow ? 0 : 1];
            for (Tensor& statistic : s) statistic = empty({channels}, doubles);
            kernels.batch_norm_statistics(detail::ref(s[0]), detail::ref(s[1]), detail::ref(s[2]),
                                          x.ref(narrow), 1e-5);
            const backend::TensorRef gain_ref = gain.ref(narrow), bias_ref = bias.ref(narrow);
            const backend::TensorRef dgain_ref = dgain.ref(narrow), dbias_ref = dbias.ref(narrow);
            kernels.batch_norm_forward(y.ref(narrow), x.ref(narrow), detail::ref(s[0]),
                                       detail::ref(s[2]), &gain_ref, &bias_ref);
            kernels.batch_norm_backward(dx.ref(narrow), &dgain_ref, &dbias_ref, dy.ref(narrow),
                                        x.ref(narrow), detail::ref(s[0]), detail::ref(s[2]),
                                        &gain_ref, training);
          }
          for (int k = 0; k < 3; ++k)
            CHECK_NO_MISMATCH(bits_mismatch(statistics[0][k], statistics[1][k], "statistics"));
          CHECK_NO_MISMATCH(twin_mismatch(y, "y"));
          CHECK_NO_MISMATCH(twin_mismatch(dx, "dx"));
          CHECK_NO_MISMATCH(twin_mismatch(dgain, "dgain"));
          CHECK_NO_MISMATCH(twin_mismatch(dbias, "dbias"));
        }
      }
    }
  }
}

TEST_CASE_FIXTURE(GpuScratch, "bfloat16 kernels: batch norm copies nothing") {
  SKIP_WITHOUT_CUDA();  // the CPU computes bfloat16 on float32 copies by design
  // Images of 12 MiB in bfloat16 (24 MiB as float32).
  const Tensor x = input({64, 96, 32, 32});
  // Batch norm's scratch is per channel: the partial moments of each of its 64 sample blocks
  // (three doubles, 144 KiB in all here) and five float32 coefficients; a float32 copy of x
  // would take 24 MiB.
  const Tensor flat = x.reshape({64, 96, 1024}), flat_dy = input({64, 96, 1024});
  const Tensor y = output({64, 96, 1024}), flat_dx = output({64, 96, 1024});
  const Tensor gain = input({96}), bias = input({96}), dgain = output({96}), dbias = output({96});
  const TensorOptions doubles{.dtype = DType::Float64, .device = gpu};
  const Tensor mean = empty({96}, doubles), variance = empty({96}, doubles);
  const Tensor rstd = empty({96}, doubles);
  const backend::TensorRef gain_ref = r(gain), bias_ref = r(bias);
  const backend::TensorRef dgain_ref = r(dgain), dbias_ref = r(dbias);
  const std::size_t moments = allocator_block(64 * 96 * 3 * sizeof(double));
  check_scratch("batch norm", moments + allocator_block(5 * 96 * float32_bytes), [&] {
    kernels.batch_norm_statistics(r(mean), r(variance), r(rstd), r(flat), 1e-5);
    kernels.batch_norm_forward(r(y), r(flat), r(mean), r(rstd), &gain_ref, &bias_ref);
    kernels.batch_norm_backward(r(flat_dx), &dgain_ref, &dbias_ref, r(flat_dy), r(flat), r(mean),
                                r(rstd), &gain_ref, true);
  });
}
