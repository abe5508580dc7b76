// bfloat16: its rounding against an independent reference, conversions, the ops that take it
// (each the float32 kernel on the rounded inputs, rounded once), their error against float32,
// mixed-precision training with float32 parameters, clear refusals where it is not served, and
// on a GPU, kernels of several families that make no float32 copies and bfloat16 products,
// norms and image ops against the CPU's. Each op family's own bfloat16 cases are in the
// bfloat16 section of its test_<family>.cpp.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

#include "backends/dispatch.h"
#include "bfloat16_checks.h"
#include "bfloat16_twins.h"
#include "core/tensor_internal.h"
#include "cuda_parity.h"
#include "helpers.h"
#include "module_gradcheck.h"
#include "normgrad.h"
#include "scratch_folder.h"

using namespace normgrad;
using testing::error_of;
using namespace testing::bfloat16_checks;

namespace {

float float_of_bits(std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

std::uint32_t bits_of(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

float widen(std::uint16_t bits) { return float_of_bits(static_cast<std::uint32_t>(bits) << 16); }

// The bfloat16 nearest to a finite float, found by comparing distances in double: the two
// candidates are the value's upper half (truncation towards zero) and the next bfloat16 away
// from zero; on a tie the one with an even last bit wins. Past the largest finite bfloat16,
// IEEE rounding gives infinity once the value reaches the midpoint to the next power of two.
std::uint16_t reference_round(float value) {
  const auto toward_zero = static_cast<std::uint16_t>(bits_of(value) >> 16);
  const auto away = static_cast<std::uint16_t>(toward_zero + 1);
  const double exact = value;
  const double below = widen(toward_zero);
  // The bfloat16 after the largest finite one (0x7f7f) is infinity, whose "value" for the
  // midpoint rule is 2^128.
  const double above = (away & 0x7fff) == 0x7f80 ? std::copysign(std::ldexp(1.0, 128), exact)
                                                 : static_cast<double>(widen(away));
  const double distance_below = std::fabs(exact - below);
  const double distance_above = std::fabs(above - exact);
  if (distance_below < distance_above) return toward_zero;
  if (distance_above < distance_below) return away;
  return (toward_zero & 1) == 0 ? toward_zero : away;
}

// max |actual - expected| / scale over elements, with scale an elementwise bound of the sizes
// involved (so that "relative error" means the same thing at every element).
double worst_scaled_error(const Tensor& actual, const Tensor& expected, const Tensor& scale) {
  const std::vector<double> a = actual.to_vector<double>(), e = expected.to_vector<double>(),
                            s = scale.to_vector<double>();
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - e[i]) / s[i]);
  return worst;
}

}  // namespace

TEST_CASE("bfloat16 rounds float32 to nearest with ties to even, as an independent reference") {
  CHECK(bfloat16(1.0f).bits == 0x3f80);
  CHECK(bfloat16(1.0f + 0x1p-8f).bits == 0x3f80);             // a tie: 0x3f80 is even
  CHECK(bfloat16(1.0f + 3 * 0x1p-8f).bits == 0x3f82);         // a tie: 0x3f81 is odd
  CHECK(bfloat16(1.0f + 0x1p-8f + 0x1p-20f).bits == 0x3f81);  // just above the midpoint
  CHECK(bfloat16(-0.0f).bits == 0x8000);
  CHECK(bfloat16(float_of_bits(0x7f7f7fff)).bits == 0x7f7f);  // below the midpoint: the largest
  CHECK(bfloat16(float_of_bits(0x7f7f8000)).bits == 0x7f80);  // the midpoint: infinity
  CHECK(bfloat16(std::numeric_limits<float>::max()).bits == 0x7f80);
  CHECK(bfloat16(-std::numeric_limits<float>::infinity()).bits == 0xff80);
  CHECK(bfloat16(float_of_bits(0x00000001)).bits == 0x0000);  // the smallest subnormal: to 0
  CHECK(bfloat16(float_of_bits(0x00010000)).bits == 0x0001);  // a bfloat16 subnormal is exact
  CHECK(bfloat16(float_of_bits(0x7f800001)).bits == 0x7fc0);  // signalling NaN: quiet
  CHECK(std::isnan(static_cast<float>(bfloat16(std::nanf("")))));
  CHECK(bfloat16(3).bits == bfloat16(3.0f).bits);  // integers and doubles go through float
  CHECK(static_cast<double>(bfloat16(0.1)) == static_cast<double>(widen(0x3dcd)));

  // Every finite bfloat16 survives the round trip; every NaN stays a NaN.
  for (std::uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const float value = widen(static_cast<std::uint16_t>(bits));
    if (std::isnan(value)) {
      CHECK(std::isnan(static_cast<float>(bfloat16(value))));
      continue;
    }
    if (bfloat16(value).bits != bits) {
      CAPTURE(bits);
      FAIL_CHECK("a bfloat16 changed in the round trip");
    }
  }
  // Floats from every binade, and the midpoints and their neighbours, against the reference.
  Generator generator(5);
  std::vector<float> values;
  for (std::uint32_t upper = 0; upper < 0x7f80; upper += 7)
    for (std::uint32_t low : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu, 0x3a5cu})
      for (std::uint32_t sign : {0u, 0x80000000u})
        values.push_back(float_of_bits(sign | (upper << 16) | low));
  int wrong = 0;
  for (const float value : values)
    if (bfloat16(value).bits != reference_round(value) && ++wrong <= 5) {
      CAPTURE(bits_of(value));
      FAIL_CHECK("rounding differs from the reference");
    }
  CHECK(wrong == 0);

  // The CPU's copy of a contiguous float32 row into bfloat16, a vectorised loop over the bits
  // that every bfloat16 operand's float32 working copy is rounded back through, gives the same
  // bits; NaNs keep their sign and the top of their payload, made quiet. And the copy back to
  // float32 is exact: each bfloat16's bits, shifted into the top half.
  const std::vector<std::pair<std::uint32_t, std::uint16_t>> nans = {
      {0x7f800001u, 0x7fc0}, {0x7fc00000u, 0x7fc0}, {0xffbfffffu, 0xffff}, {0x7f812345u, 0x7fc1}};
  std::vector<float> nan_values;
  for (const auto& [payload, expected] : nans) nan_values.push_back(float_of_bits(payload));
  const auto rounded_row = [](const std::vector<float>& row) {
    const auto n = static_cast<std::int64_t>(row.size());
    return from_vector<float>(row, {n}).to(DType::BFloat16).to_vector<bfloat16>();
  };
  const std::vector<bfloat16> nan_row = rounded_row(nan_values);
  for (std::size_t i = 0; i < nans.size(); ++i) {
    CAPTURE(nans[i].first);
    CHECK(nan_row[i].bits == nans[i].second);
    CHECK(bfloat16(nan_values[i]).bits == nans[i].second);
  }
  const std::vector<bfloat16> row = rounded_row(values);
  int differ = 0;
  for (std::size_t i = 0; i < values.size(); ++i)
    if (row[i].bits != bfloat16(values[i]).bits && ++differ <= 5) {
      CAPTURE(bits_of(values[i]));
      FAIL_CHECK("the row's rounding differs from the scalar conversion");
    }
  CHECK(differ == 0);
  std::vector<bfloat16> every_bfloat16(0x10000);
  for (std::uint32_t bits = 0; bits <= 0xffff; ++bits)
    every_bfloat16[bits].bits = static_cast<std::uint16_t>(bits);
  const std::vector<float> widened =
      from_vector<bfloat16>(every_bfloat16, {0x10000}).to(DType::Float32).to_vector<float>();
  int inexact = 0;
  for (std::uint32_t bits = 0; bits <= 0xffff; ++bits)
    if (bits_of(widened[bits]) != bits << 16 && ++inexact <= 5) {
      CAPTURE(bits);
      FAIL_CHECK("the row's widening is not the bits shifted");
    }
  CHECK(inexact == 0);
}

TEST_CASE("next_toward steps to the neighbouring bfloat16, as nextafter does for float") {
  const auto b = [](float value) { return bfloat16(value); };
  const auto bits = [](bfloat16 value) { return value.bits; };
  CHECK(static_cast<float>(next_toward(b(1), b(0))) == 0.99609375f);  // 1 - 2^-8
  CHECK(static_cast<float>(next_toward(b(1), b(2))) == 1.0078125f);   // 1 + 2^-7
  CHECK(static_cast<float>(next_toward(b(-1), b(0))) == -0.99609375f);
  CHECK(static_cast<float>(next_toward(b(-1), b(-2))) == -1.0078125f);
  CHECK(static_cast<float>(next_toward(b(3), b(-2))) == 2.984375f);  // 3 - 2^-6
  CHECK(bits(next_toward(b(0), b(1))) == 0x0001);                    // the smallest subnormals
  CHECK(bits(next_toward(b(-0.0f), b(-1))) == 0x8001);
  CHECK(bits(next_toward(bfloat16::from_bits(0x0001), b(-1))) == 0x0000);
  CHECK(bits(next_toward(b(2), b(2))) == bits(b(2)));
  CHECK(bits(next_toward(b(0.5f), b(std::numeric_limits<float>::quiet_NaN()))) == 0x7fc0);
}

TEST_CASE("tensors convert to and from bfloat16") {
  CHECK(element_size(DType::BFloat16) == 2);
  CHECK(to_string(DType::BFloat16) == "bfloat16");
  CHECK(is_floating(DType::BFloat16));

  const std::vector<float> values = {1.0f, -2.5f, 0.1f, 1e30f, 3.0e38f, -1e-40f, 65504.0f};
  const Tensor x = from_vector(values, {7});
  const Tensor y = bf16(x);
  CHECK(y.dtype() == DType::BFloat16);
  const std::vector<bfloat16> stored = y.to_vector<bfloat16>();
  for (std::size_t i = 0; i < values.size(); ++i) CHECK(stored[i].bits == bfloat16(values[i]).bits);
  // Widening is exact, in float32 and float64 alike.
  const std::vector<double> wide = y.to(DType::Float64).to_vector<double>();
  for (std::size_t i = 0; i < values.size(); ++i)
    CHECK(wide[i] == static_cast<double>(static_cast<float>(stored[i])));
  CHECK(same_bits(bf16(y.to(DType::Float64)), y));

  // int64 converts through float; factories fill bfloat16 directly.
  const Tensor counts = from_vector<std::int64_t>({0, 1, 257, -3}, {4});
  CHECK(bf16(counts).to_vector<float>() == std::vector<float>{0, 1, 256, -3});
  CHECK(zeros({2, 3}, {.dtype = DType::BFloat16}).to_vector<float>() == std::vector<float>(6, 0));
  CHECK(full({2}, 1.5, {.dtype = DType::BFloat16}).to_vector<float>() ==
        std::vector<float>{1.5f, 1.5f});
  // Random draws are the float32 draws, rounded.
  Generator a(11), b(11);
  CHECK(same_bits(randn({64}, a, {.dtype = DType::BFloat16}), bf16(randn({64}, b))));

  // Strided views convert too.
  const Tensor matrix = randn({5, 6}, a);
  CHECK(same_bits(bf16(matrix.t()), bf16(matrix).t().contiguous()));
}

TEST_CASE("to(bfloat16) passes gradients back in the source dtype") {
  Tensor x = from_vector<float>({1.0f, 2.0f, 3.0f}, {3}).requires_grad_();
  (bf16(x) * 0.5).sum().backward();
  REQUIRE(x.grad().defined());
  CHECK(x.grad().dtype() == DType::Float32);
  CHECK(x.grad().to_vector<float>() == std::vector<float>{0.5f, 0.5f, 0.5f});
}

TEST_CASE("bfloat16 ops give the float32 kernel's result on the rounded inputs, rounded once") {
  Generator generator(3);
  const Tensor a = bf16(randn({4, 6}, generator));
  const Tensor b = bf16(randn({6, 5}, generator));
  const Tensor row = bf16(randn({6}, generator));
  const Tensor batched = bf16(randn({3, 4, 6}, generator));
  const auto once = [](const Tensor& float_result) { return bf16(float_result); };

  CHECK(same_bits(exp(a), once(exp(f32(a)))));
  CHECK(same_bits(tanh(a.t()), once(tanh(f32(a).t()))));
  CHECK(same_bits(a * 3.0, once(f32(a) * 3.0)));
  CHECK(same_bits(a + row, once(f32(a) + f32(row))));  // a broadcast operand
  CHECK(same_bits(batched * row, once(f32(batched) * f32(row))));
  CHECK(same_bits(where(gt(a, 0.0), a, -a), once(where(gt(f32(a), 0.0), f32(a), -f32(a)))));
  CHECK(same_bits(a.sum({1}), once(f32(a).sum({1}))));
  CHECK(same_bits(a.softmax(-1), once(f32(a).softmax(-1))));
  CHECK(same_bits(matmul(a, b), once(matmul(f32(a), f32(b)))));
  CHECK(same_bits(matmul(b.t(), a.t()), once(matmul(f32(b).t(), f32(a).t()))));  // transposed
  CHECK(same_bits(matmul(batched, b), once(matmul(f32(batched), f32(b)))));      // broadcast batch
  const Tensor gain = bf16(randn({6}, generator)), bias = bf16(randn({6}, generator));
  CHECK(same_bits(layer_norm(a, 1, gain, bias), once(layer_norm(f32(a), 1, f32(gain), f32(bias)))));
  CHECK(same_bits(rms_norm(batched, 1, gain, Tensor()),
                  once(rms_norm(f32(batched), 1, f32(gain), Tensor()))));

  // Backward passes too: the gradient of each bfloat16 input is bfloat16.
  Tensor x = a.clone().requires_grad_(), w = b.clone().requires_grad_();
  Tensor x32 = f32(a).requires_grad_(), w32 = f32(b).requires_grad_();
  matmul(x, w).tanh().sum().backward();
  bf16(matmul(x32, w32)).tanh().sum().backward();
  REQUIRE(x.grad().defined());
  CHECK(x.grad().dtype() == DType::BFloat16);
  CHECK(w.grad().dtype() == DType::BFloat16);
}

// Each image op, forward and backward, against its float32 twin run on the rounded inputs and
// the rounded upstream gradient: one kernel on float32 copies, its outputs rounded once.
TEST_CASE("bfloat16 convolutions, pooling and batch norm: the float32 kernels' results, rounded") {
  Generator generator(5);
  const Tensor image = bf16(randn({2, 3, 8, 8}, generator));
  const Tensor kernel = bf16(randn({4, 3, 3, 3}, generator));
  const Tensor bias = bf16(randn({4}, generator));
  const auto once = [](const Tensor& float_result) { return bf16(float_result); };
  // Runs `op` on bfloat16 leaves and on float32 copies of them, with one rounded upstream
  // gradient, and checks the output and each input's gradient.
  const auto check_op = [&](const std::vector<Tensor>& inputs,
                            const std::function<Tensor(const std::vector<Tensor>&)>& op) {
    std::vector<Tensor> half, single;
    for (const Tensor& input : inputs) {
      half.push_back(input.clone().requires_grad_());
      single.push_back(f32(input).requires_grad_());
    }
    const Tensor y = op(half), y32 = op(single);
    CHECK(same_bits(y, once(y32)));
    const Tensor upstream = bf16(randn(y.shape(), generator));
    y.backward(upstream);
    y32.backward(f32(upstream));
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      CAPTURE(i);
      REQUIRE(half[i].grad().defined());
      CHECK(same_bits(half[i].grad(), once(single[i].grad())));
    }
  };
  SUBCASE("conv2d, padded, with a bias") {
    check_op({image, kernel, bias},
             [](const std::vector<Tensor>& v) { return conv2d(v[0], v[1], v[2], 1, 1); });
  }
  SUBCASE("max_pool2d and avg_pool2d") {
    check_op({image}, [](const std::vector<Tensor>& v) { return max_pool2d(v[0], 2); });
    check_op({image}, [](const std::vector<Tensor>& v) { return avg_pool2d(v[0], 3, 1, 1); });
  }
  SUBCASE("batch_norm in training, with gain and bias") {
    const Tensor gain = bf16(randn({3}, generator)), shift = bf16(randn({3}, generator));
    check_op({image, gain, shift}, [](const std::vector<Tensor>& v) {
      return batch_norm(v[0], v[1], v[2], Tensor(), Tensor(), true, 0.1, 1e-5);
    });
  }
  SUBCASE("the backend's im2col and col2im, which the convolutions use inside") {
    const backend::Window2d window{
        .kernel_h = 3, .kernel_w = 3, .stride_h = 2, .stride_w = 2, .padding_h = 1, .padding_w = 1};
    const auto columns_like = [&](DType dtype) {  // [N, C kh kw, OH OW] for 8 x 8 images
      return empty({2, 27, 16}, {.dtype = dtype});
    };
    backend::Backend& cpu = backend::cpu_backend();
    const Tensor columns = columns_like(DType::BFloat16), columns32 = columns_like(DType::Float32);
    cpu.im2col(detail::ref(columns), detail::ref(image), window);
    cpu.im2col(detail::ref(columns32), detail::ref(f32(image)), window);
    CHECK(same_bits(columns, once(columns32)));  // a copy: exact
    const Tensor sums = empty(image.shape(), {.dtype = DType::BFloat16});
    const Tensor sums32 = empty(image.shape(), {.dtype = DType::Float32});
    cpu.col2im(detail::ref(sums), detail::ref(columns), window);
    cpu.col2im(detail::ref(sums32), detail::ref(f32(columns)), window);
    CHECK(same_bits(sums, once(sums32)));
  }
  SUBCASE("a strided convolution: its input gradient sums float32 columns, rounded once") {
    Tensor x = image.clone().requires_grad_(), x32 = f32(image).requires_grad_();
    const Tensor y = conv2d(x, kernel, Tensor(), 2, 1),
                 y32 = conv2d(x32, f32(kernel), Tensor(), 2, 1);
    CHECK(same_bits(y, once(y32)));
    const Tensor upstream = bf16(randn(y.shape(), generator));
    y.backward(upstream);
    y32.backward(f32(upstream));
    // The columns W^T dY stay float32 and col2im sums them in float32 before one rounding: dx
    // is float32's rounded, up to the order in which BLAS adds (the bfloat16 side multiplies a
    // row-major float32 copy of W^T, the float32 side the transposed view): within one
    // bfloat16 step everywhere, and the same bits in all but 1% (measured: all).
    const Tensor expected = f32(once(x32.grad()));
    const Tensor error = (f32(x.grad()) - expected).abs();
    CHECK(x.grad().dtype() == DType::BFloat16);
    CHECK(min(le(error, expected.abs() * (2 * unit))).item() == 1.0);
    CHECK(ne(error, 0.0).to(DType::Float32).mean().item() <= 0.01);
  }
}

TEST_CASE(
    "a convolution with batch norm runs in mixed precision; the running estimates stay float32") {
  manual_seed(34);
  // No bias of its own: batch norm takes its place (and would make its gradient 0 in exact
  // arithmetic, a sum that cancels).
  nn::Conv2d conv(3, 4, 3, {.padding = 1, .bias = false});
  // Momentum 1: the running estimates become this batch's statistics.
  nn::BatchNorm2d norm(4, {.momentum = 1.0});
  Generator generator(9);
  const Tensor x = randn({2, 3, 6, 6}, generator), upstream = randn({2, 4, 6, 6}, generator);
  Tensor outputs[2], means[2], variances[2];
  std::vector<Tensor> grads[2];
  for (const bool mixed : {false, true}) {
    conv.zero_grad();
    norm.zero_grad();
    norm.running_mean.zero_();
    norm.running_var.fill_(1.0);
    outputs[mixed] = norm.forward(conv.forward(mixed ? bf16(x) : x));
    (f32(outputs[mixed]) * upstream).sum().backward();
    for (const Tensor& p : conv.parameters()) grads[mixed].push_back(p.grad());
    for (const Tensor& p : norm.parameters()) grads[mixed].push_back(p.grad());
    means[mixed] = norm.running_mean.clone();
    variances[mixed] = norm.running_var.clone();
  }
  CHECK(outputs[1].dtype() == DType::BFloat16);
  CHECK(means[1].dtype() == DType::Float32);
  CHECK(variances[1].dtype() == DType::Float32);
  // Normalised values are O(1): within 2^-5 of float32's. The statistics come from the rounded
  // convolution's outputs, each within u of float32's: the means within u of the channel's
  // deviation, the variances within 2u of themselves (measured: 0.29u and 0.64u); held to
  // twice that.
  CHECK((f32(outputs[1]) - outputs[0]).abs().max().item() <= 0x1p-5);
  CHECK(((means[1] - means[0]).abs() / variances[0].sqrt()).max().item() <= 2 * unit);
  CHECK(((variances[1] - variances[0]).abs() / variances[0]).max().item() <= 4 * unit);
  check_parameter_grads(grads[1], grads[0], 0x1p-4);
  nn::BatchNorm2d float64_norm(4, {.dtype = DType::Float64});
  CHECK_ERROR(float64_norm.forward(bf16(randn({2, 4, 3, 3}, generator))), "BatchNorm2d",
              "expects float64 input", "bfloat16");
}

// The stated tolerances of bfloat16 against float32 on the same unrounded data, to first order
// in u = 2^-8, the most that rounding moves a value (relative). A product of two rounded inputs
// errs by up to 2u |a| |b| before the output's own rounding (u |c|), so a matrix product stays
// within 2u sum |a_ik| |b_kj| + u |c_ij|. A norm's output y = g (x - mu) / r + b stays within
// u (|x| / r + mean|x| / r + 2 |ŷ|) |g| + u (|b| + |y|) per value (below). Its input gradient
// sums over the row like a product: within 4u of the largest |dx|.
TEST_CASE("bfloat16 products and norms stay within the stated tolerances of float32") {
  Generator generator(7);
  const Tensor a = randn({48, 256}, generator), b = randn({256, 40}, generator);
  const Tensor c = matmul(a, b);
  const Tensor scale = matmul(abs(a), abs(b)) * (2 * unit) + abs(c) * unit;
  const double product_error = worst_scaled_error(matmul(bf16(a), bf16(b)), c, scale);
  CAPTURE(product_error);
  CHECK(product_error <= 1.0);
  CHECK(product_error > 0);  // the bfloat16 product did round

  for (const bool layer : {true, false}) {
    CAPTURE(layer);
    const Tensor x = randn({32, 512}, generator) * 2.0 + 0.5;
    const Tensor gain = randn({512}, generator), bias = randn({512}, generator);
    const Tensor dy = randn({32, 512}, generator);
    const auto norm = [layer](const Tensor& input, const Tensor& g, const Tensor& shift) {
      return layer ? layer_norm(input, 1, g, shift) : rms_norm(input, 1, g, shift);
    };
    Tensor x32 = x.clone().requires_grad_(), x16 = bf16(x).requires_grad_();
    const Tensor y32 = norm(x32, gain, bias);
    const Tensor y16 = norm(x16, gain, bias);  // float32 gain and bias meet bfloat16 rows
    CHECK(y16.dtype() == DType::BFloat16);
    // Rounding x moves x - mu by up to u (|x| + mean|x|) and r by up to u r (so ŷ by u |ŷ|);
    // rounding g and b moves y by u (|ŷ| |g| + |b|); rounding y, by u |y|.
    const Tensor centred = layer ? x - x.mean({1}, true) : x;
    const Tensor r = centred.square().mean({1}, true).sqrt();
    const Tensor moved = (abs(x) + abs(x).mean({1}, true)) / r + abs(centred / r) * 2.0;
    const Tensor y_scale = (moved * abs(gain) + abs(bias) + abs(y32.detach())) * unit;
    const double value_error = worst_scaled_error(y16, y32, y_scale);
    CAPTURE(value_error);
    CHECK(value_error <= 1.0);
    (y32 * dy).sum().backward();
    (f32(y16) * dy).sum().backward();
    const double largest = x32.grad().abs().max().item();
    const double gradient_error = (f32(x16.grad()) - x32.grad()).abs().max().item() / largest;
    CAPTURE(gradient_error);
    CHECK(gradient_error <= 4 * unit);
  }
}

TEST_CASE("a network trains in mixed precision: bfloat16 activations, float32 parameters") {
  manual_seed(21);
  nn::Linear first(16, 64), last(64, 4);
  nn::RMSNorm norm({64});
  std::vector<Tensor> parameters = first.parameters();
  for (const Tensor& p : norm.parameters()) parameters.push_back(p);
  for (const Tensor& p : last.parameters()) parameters.push_back(p);
  std::vector<Tensor> initial;
  for (const Tensor& p : parameters) initial.push_back(p.detach().clone());

  Generator data(4);
  const Tensor inputs = randn({128, 16}, data);
  const Tensor targets = argmax(matmul(inputs, randn({16, 4}, data)), 1);

  std::vector<double> losses[2];
  for (const bool mixed : {false, true}) {
    for (std::size_t i = 0; i < parameters.size(); ++i) parameters[i].detach().copy_(initial[i]);
    optim::SGD sgd(parameters, {.lr = 0.1, .momentum = 0.9});
    for (int step = 0; step < 40; ++step) {
      sgd.zero_grad();
      const Tensor x = mixed ? bf16(inputs) : inputs;
      const Tensor logits = last.forward(relu(norm.forward(first.forward(x))));
      CHECK(logits.dtype() == (mixed ? DType::BFloat16 : DType::Float32));
      const Tensor loss = nn::cross_entropy(logits, targets);
      CHECK(loss.dtype() == DType::Float32);  // bfloat16 logits are scored in float32
      loss.backward();
      for (const Tensor& p : parameters) CHECK(p.grad().dtype() == DType::Float32);
      sgd.step();
      losses[mixed].push_back(loss.item());
    }
  }
  CAPTURE(losses[0].back());
  CAPTURE(losses[1].back());
  CHECK(losses[1].back() < 0.5 * losses[1].front());  // it learns
  // The two runs follow the same path: within 3% at every step (bfloat16's 2^-8 steps add up).
  for (std::size_t step = 0; step < losses[0].size(); ++step) {
    CAPTURE(step);
    CHECK(std::fabs(losses[1][step] - losses[0][step]) <= 0.03 * losses[0][step] + 1e-3);
  }
}

TEST_CASE("a Transformer layer runs in mixed precision, padding masks included") {
  manual_seed(31);
  nn::TransformerEncoderLayer layer(32, 4, 64, {.norm = "rmsnorm", .dropout = 0.0});
  Generator generator(6);
  const Tensor x = randn({2, 5, 32}, generator);
  const Tensor padding = testing::int_mask({{0, 0, 0, 0, 0}, {0, 0, 0, 1, 1}});
  const Tensor upstream = randn({2, 5, 32}, generator);
  Tensor outputs[2];
  std::vector<Tensor> grads[2];
  for (const bool mixed : {false, true}) {
    layer.zero_grad();
    outputs[mixed] = layer.forward(mixed ? bf16(x) : x, padding);
    (f32(outputs[mixed]) * upstream).sum().backward();
    for (const Tensor& p : layer.parameters()) grads[mixed].push_back(p.grad());
  }
  CHECK(outputs[1].dtype() == DType::BFloat16);
  // Post-norm output values are O(1); a few bfloat16 roundings on the way: within 2^-4.
  const double value_error = (f32(outputs[1]) - outputs[0]).abs().max().item();
  CAPTURE(value_error);
  CHECK(value_error <= 0x1p-4);
  CHECK(value_error > 0);
  check_parameter_grads(grads[1], grads[0], 0x1p-4);
}

TEST_CASE("additive attention runs in mixed precision, with each norm and with padding") {
  for (const std::string norm : {"none", "layernorm", "rmsnorm", "weightnorm"}) {
    CAPTURE(norm);
    manual_seed(33);
    nn::AdditiveAttention attention(12, 8, 10, {.norm = norm});
    testing::randomise(attention, 4);
    Generator generator(8);
    const Tensor context = randn({2, 5, 12}, generator), query = randn({2, 3, 8}, generator);
    const Tensor padding = testing::int_mask({{0, 0, 0, 0, 0}, {0, 0, 1, 1, 1}});
    const Tensor upstream = randn({2, 3, 12}, generator);
    Tensor outputs[2];
    std::vector<Tensor> grads[2];
    for (const bool mixed : {false, true}) {
      attention.zero_grad();
      const auto source = attention.project_context(mixed ? bf16(context) : context, padding);
      outputs[mixed] = attention.attend(source, mixed ? bf16(query) : query).output;
      (f32(outputs[mixed]) * upstream).sum().backward();
      for (const Tensor& p : attention.parameters()) grads[mixed].push_back(p.grad());
    }
    CHECK(outputs[1].dtype() == DType::BFloat16);
    // The output is a weighted mean of context rows of size O(1): within 2^-5 of float32's.
    const double value_error = (f32(outputs[1]) - outputs[0]).abs().max().item();
    CAPTURE(value_error);
    CHECK(value_error <= 0x1p-5);
    check_parameter_grads(grads[1], grads[0], 0x1p-4);
  }
}

TEST_CASE("a Transformer decoder's cached steps run in mixed precision") {
  manual_seed(32);
  nn::TransformerDecoder decoder(2, 16, 2, 32, {.norm = "layernorm", .dropout = 0.0});
  Generator generator(7);
  const Tensor target = bf16(randn({3, 4, 16}, generator));
  const Tensor memory = bf16(randn({3, 5, 16}, generator));
  const Tensor padding = testing::int_mask({{0, 0, 0, 1, 1}, {0, 0, 0, 0, 0}, {0, 1, 1, 1, 1}});
  NoGradGuard no_grad;
  const Tensor full = decoder.forward(target, memory, {.memory_padding_mask = padding});
  REQUIRE(full.dtype() == DType::BFloat16);
  nn::TransformerDecoderCache cache = decoder.start(memory, padding);
  for (std::int64_t t = 0; t < 4; ++t) {
    CAPTURE(t);
    const Tensor step = decoder.step(target.narrow(1, t, 1), cache);
    CHECK(step.dtype() == DType::BFloat16);
    // The step and the whole prefix round different sums (one position's against all of
    // them at once) to bfloat16: within 2^-4 of each other at post-norm's O(1) values.
    const double difference = (f32(step) - f32(full.narrow(1, t, 1))).abs().max().item();
    CAPTURE(difference);
    CHECK(difference <= 0x1p-4);
  }
  CHECK_ERROR(decoder.step(f32(target.narrow(1, 0, 1)), cache), "cached keys and values",
              "float32 step", "bfloat16 keys");
}

TEST_CASE("ops that do not serve bfloat16 refuse it with a clear error") {
  Generator generator(2);
  // Adam keeps float32 master weights: a bfloat16 parameter is refused, not updated in 8 bits.
  Tensor weight = bf16(randn({3, 2}, generator)).detach();
  weight.set_requires_grad(true);
  bf16(randn({2, 3}, generator)).matmul(weight).sum().backward();
  optim::Adam adam({weight}, {.lr = 0.1});
  const std::string message = error_of([&] { adam.step(); });
  CAPTURE(message);
  CHECK(message.find("bfloat16") != std::string::npos);
  CHECK(message.find("Float32") != std::string::npos);
  // Mixing bfloat16 with float32 outside a layer's parameters stays an error of the op.
  const std::string mixed = error_of([&] { bf16(randn({3}, generator)) + randn({3}, generator); });
  CHECK(mixed.find("dtypes differ") != std::string::npos);
}

TEST_CASE("checkpoints keep bfloat16 tensors as safetensors BF16") {
  testing::ScratchFolder folder("bfloat16_checkpoint");
  std::filesystem::create_directories(folder.path);
  const std::string path = folder / "model.safetensors";
  nn::Linear stored(3, 2, {.dtype = DType::BFloat16});
  CHECK(stored.weight.dtype() == DType::BFloat16);
  const Tensor rounded = bf16(randn({2, 3}));
  stored.weight.detach().copy_(rounded);
  io::save(stored, path);
  nn::Linear loaded(3, 2, {.dtype = DType::BFloat16});
  io::load(loaded, path);
  CHECK(same_bits(loaded.weight.detach(), rounded));
  CHECK(same_bits(loaded.bias.detach(), stored.bias.detach()));
  // A float32 model refuses the bfloat16 file rather than converting silently.
  nn::Linear wide(3, 2);
  const std::string message = error_of([&] { io::load(wide, path); });
  CAPTURE(message);
  CHECK(!message.empty());
}

// The CPU computes bfloat16 through float32 working copies of its operands
// (backends/bfloat16_widening.h); CUDA's kernels are native: they widen each value they load to
// float32 and round once as they store, and the case below checks, by the peak of the GPU's
// memory, that they make no float32 copies.

using backend::BinaryOp;
using backend::UnaryOp;
using testing::twins::to_bfloat16;

TEST_CASE(
    "bfloat16 kernels: the GPU's elementwise ops, reductions, softmax and norms make no float32 "
    "copies") {
  SKIP_WITHOUT_CUDA();  // the CPU computes bfloat16 on float32 copies by design
  Generator generator(45);
  const std::int64_t n = 1024;
  const Device device = Device::cuda();
  const Tensor x = to_bfloat16(randn({n, n}, generator)).to(device);  // 2 MiB; 4 MiB as float32
  const Tensor y = to_bfloat16(randn({n, n}, generator)).to(device);
  Tensor out = empty({n, n}, {.dtype = DType::BFloat16, .device = device});
  Tensor row_sums = empty({n, 1}, {.dtype = DType::BFloat16, .device = device});
  Tensor row_indices = empty({n, 1}, {.dtype = DType::Int64, .device = device});
  Tensor mean = empty({n}, {.device = device}), rstd = empty({n}, {.device = device});
  backend::Backend& backend = backend::backend_for(device);
  const backend::NormParams layer_norm{.centred = true, .eps = 1e-5};
  reset_peak_memory_stats(device);
  const std::size_t allocated = memory_stats(device).allocated_bytes;
  backend.unary(UnaryOp::Tanh, detail::ref(out), detail::ref(x), 0, 0);
  backend.unary(UnaryOp::Exp, detail::ref(out), detail::ref(x), 0, 0);
  backend.binary(BinaryOp::Mul, detail::ref(out), detail::ref(x), detail::ref(y), 0);
  backend.where(detail::ref(out), detail::ref(x), detail::ref(x), detail::ref(y));
  backend.binary(BinaryOp::Lt, detail::ref(out), detail::ref(x), detail::ref(y), 0);
  backend.reduce(backend::ReduceOp::Sum, detail::ref(row_sums), detail::ref(x), 0, 1.0);
  backend.reduce(backend::ReduceOp::Max, detail::ref(row_sums), detail::ref(x), 0, 1.0);
  backend.reduce(backend::ReduceOp::ArgMax, detail::ref(row_indices), detail::ref(x), 0, 1.0);
  backend.softmax(detail::ref(out), detail::ref(x), 1, false);
  backend.softmax_backward(detail::ref(out), detail::ref(y), detail::ref(x), 1, false);
  backend.norm_forward(layer_norm, detail::ref(out), detail::ref(mean), detail::ref(rstd),
                       detail::ref(x), nullptr, nullptr);
  backend.norm_backward(layer_norm, detail::ref(out), nullptr, nullptr, detail::ref(y),
                        detail::ref(x), detail::ref(mean), detail::ref(rstd), nullptr);
  cuda::synchronize();
  const MemoryStats stats = memory_stats(device);
  CHECK(stats.allocated_bytes == allocated);
  // The reductions' partial results (16 KiB for the sum, 64 KiB for argmax's values with
  // their indices) are the only scratch. A float32 copy of x is 4 MiB.
  CHECK(stats.peak_allocated_bytes <= allocated + (128u << 10));
}

TEST_CASE("cuda parity: bfloat16 products and norms, forward and backward") {
  SKIP_PARITY_WITHOUT_CUDA();
  using namespace testing;
  Generator generator(9);
  // cuBLAS adds in its own order on the tensor cores: the product's stated bound (above), and
  // one bfloat16 rounding of the result either way.
  const Tensor a = bf16(randn({70, 300}, generator)), b = bf16(randn({300, 50}, generator));
  const Tensor cpu = matmul(a, b);
  const Tensor gpu = matmul(a.to(parity_device()), b.to(parity_device())).to(Device::cpu());
  CHECK(gpu.dtype() == DType::BFloat16);
  const Tensor scale = matmul(abs(f32(a)), abs(f32(b))) * 1e-5 + abs(f32(cpu)) * (2 * unit);
  CHECK(worst_scaled_error(gpu, cpu, scale) <= 1.0);
  // The norms load bfloat16 and compute in float32 on both devices, in different orders: the
  // same values up to a bfloat16 step of the output, gradients up to two steps of the largest.
  for (const Shape& shape : {Shape{33, 700}, Shape{64, 1024}}) {  // 700: no 16-byte packs
    for (const bool layer : {true, false}) {
      CAPTURE(shape);
      CAPTURE(layer);
      const Tensor x0 = bf16(randn(shape, generator) + 0.5), dy = randn(shape, generator);
      const Tensor gain0 = randn({shape[1]}, generator), bias0 = randn({shape[1]}, generator);
      Tensor outputs[2], x_grads[2], gain_grads[2], bias_grads[2];
      for (int device = 0; device < 2; ++device) {
        const Device where = device == 0 ? Device::cpu() : parity_device();
        Tensor x = x0.to(where).requires_grad_();
        Tensor gain = gain0.to(where).requires_grad_(), bias = bias0.to(where).requires_grad_();
        const Tensor y = layer ? layer_norm(x, 1, gain, bias) : rms_norm(x, 1, gain, bias);
        (f32(y) * dy.to(where)).sum().backward();
        outputs[device] = y.to(Device::cpu());
        x_grads[device] = x.grad().to(Device::cpu());
        gain_grads[device] = gain.grad().to(Device::cpu());
        bias_grads[device] = bias.grad().to(Device::cpu());
      }
      CHECK(outputs[1].dtype() == DType::BFloat16);
      CHECK(x_grads[1].dtype() == DType::BFloat16);
      CHECK(worst_scaled_error(outputs[1], outputs[0], abs(f32(outputs[0])) * unit + 1e-6) <= 1.0);
      const auto relative_to_largest = [](const Tensor& actual, const Tensor& expected) {
        return (f32(actual) - f32(expected)).abs().max().item() / f32(expected).abs().max().item();
      };
      CHECK(relative_to_largest(x_grads[1], x_grads[0]) <= 2 * unit);
      CHECK(relative_to_largest(gain_grads[1], gain_grads[0]) <= 2 * unit);
      CHECK(relative_to_largest(bias_grads[1], bias_grads[0]) <= 2 * unit);
    }
  }
}

TEST_CASE("cuda parity: bfloat16 convolutions, pooling and batch norm, forward and backward") {
  SKIP_PARITY_WITHOUT_CUDA();
  using namespace testing;
  Generator generator(10);
  const Tensor image = bf16(randn({4, 3, 12, 12}, generator));
  const Tensor kernel = bf16(randn({8, 3, 3, 3}, generator));
  const Tensor gain = bf16(randn({8}, generator)), shift = bf16(randn({8}, generator));
  const Tensor upstream = randn({4, 8, 3, 3}, generator);
  // Each op computes in float32 and rounds once on both devices (the GPU's convolution by
  // columns from bfloat16 columns on the tensor cores, the CPU's on float32 copies); the
  // kernels add in different orders, so values and gradients agree to within a bfloat16 step
  // or two of the largest.
  const auto relative_to_largest = [](const Tensor& actual, const Tensor& expected) {
    return (f32(actual) - f32(expected)).abs().max().item() / f32(expected).abs().max().item();
  };
  // Stride 1 computes the input gradient as a convolution, stride 2 through col2im.
  for (const auto& setting :
       {std::pair{cuda::ConvAlgorithm::Columns, 1}, std::pair{cuda::ConvAlgorithm::Columns, 2},
        std::pair{cuda::ConvAlgorithm::ImplicitGemm, 1},
        std::pair{cuda::ConvAlgorithm::ImplicitGemm, 2}}) {
    // Plain variables, not a structured binding: CAPTURE's lambda takes them, which clang
    // allows for bindings only from version 16.
    const cuda::ConvAlgorithm algorithm = setting.first;
    const int stride = setting.second;
    CAPTURE(static_cast<int>(algorithm));
    CAPTURE(stride);
    const cuda::ConvAlgorithm before = cuda::conv_algorithm();
    cuda::set_conv_algorithm(algorithm);
    Tensor outputs[2];
    std::vector<Tensor> grads[2];
    for (int device = 0; device < 2; ++device) {
      const Device where = device == 0 ? Device::cpu() : parity_device();
      std::vector<Tensor> leaves;
      for (const Tensor& t : {image, kernel, gain, shift})
        leaves.push_back(t.to(where).requires_grad_());
      const Tensor y = conv2d(leaves[0], leaves[1], Tensor(), stride, 1);  // 12 or 6 square
      const Tensor normed =
          batch_norm(y, leaves[2], leaves[3], Tensor(), Tensor(), true, 0.1, 1e-5);
      const Tensor maxima = max_pool2d(leaky_relu(normed, 0.1), 2);
      const Tensor pooled = stride == 1 ? avg_pool2d(maxima, 2) : maxima;  // 3 square
      (f32(pooled) * upstream.to(where)).sum().backward();
      outputs[device] = pooled.to(Device::cpu());
      for (const Tensor& leaf : leaves) grads[device].push_back(leaf.grad().to(Device::cpu()));
    }
    cuda::set_conv_algorithm(before);
    CHECK(outputs[1].dtype() == DType::BFloat16);
    CHECK(relative_to_largest(outputs[1], outputs[0]) <= 2 * unit);
    for (std::size_t i = 0; i < grads[0].size(); ++i) {
      CAPTURE(i);
      CHECK(grads[1][i].dtype() == DType::BFloat16);
      CHECK(relative_to_largest(grads[1][i], grads[0][i]) <= 4 * unit);
    }
  }
}
