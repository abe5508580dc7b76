// Adam/AdamW, SGD with Nesterov momentum, gradient clipping and learning-rate schedules,
// against steps worked out by hand on tiny problems.

#include <cmath>

#include "helpers.h"

using namespace normgrad;
using testing::all_close;

namespace {

Tensor parameter(std::vector<double> values) {
  const auto size = static_cast<std::int64_t>(values.size());
  return from_vector(values, {size}).requires_grad_();
}

void set_grad(Tensor& w, std::vector<double> values) {
  w.zero_grad();
  const auto size = static_cast<std::int64_t>(values.size());
  (w * from_vector(values, {size})).sum().backward();
}

// Adam by hand, one scalar at a time (eps outside the square root, bias-corrected moments).
struct ScalarAdam {
  double w, m = 0, v = 0;
  int t = 0;
  void step(double g, double lr, double beta1, double beta2, double eps, double decay,
            bool decoupled, bool eps_inside_sqrt = false) {
    ++t;
    if (decoupled)
      w -= lr * decay * w;
    else
      g += decay * w;
    m = beta1 * m + (1 - beta1) * g;
    v = beta2 * v + (1 - beta2) * g * g;
    const double m_hat = m / (1 - std::pow(beta1, t)), v_hat = v / (1 - std::pow(beta2, t));
    w -= lr * m_hat / (eps_inside_sqrt ? std::sqrt(v_hat + eps) : std::sqrt(v_hat) + eps);
  }
};

}  // namespace

TEST_CASE("Adam, Adam with L2 decay and AdamW follow the update worked out by hand") {
  const std::vector<std::vector<double>> grads = {
      {0.5, -1.0, 0.0}, {-0.2, 0.3, 2.0}, {0.1, 0.1, -0.4}};
  for (const bool decoupled : {false, true}) {
    for (const double decay : {0.0, 0.1}) {
      CAPTURE(decoupled);
      CAPTURE(decay);
      Tensor w = parameter({1.0, -2.0, 0.5});
      optim::Adam adam(
          {w},
          {.lr = 0.1, .eps = 1e-3, .weight_decay = decay, .decoupled_weight_decay = decoupled});
      std::vector<ScalarAdam> expected = {{1.0}, {-2.0}, {0.5}};
      for (const auto& g : grads) {
        set_grad(w, g);
        adam.step();
        for (std::size_t i = 0; i < 3; ++i)
          expected[i].step(g[i], 0.1, 0.9, 0.999, 1e-3, decay, decoupled);
        CHECK(all_close(w, {expected[0].w, expected[1].w, expected[2].w}, 1e-12, 1e-14));
      }
      CHECK(adam.step_count(0) == 3);
      CHECK(adam.exp_avg(0).shape() == Shape{3});
    }
  }
}

TEST_CASE("Adam with eps inside the square root follows the update worked out by hand") {
  // eps = 1e-3 inside the root acts as about 0.03 outside it: far from the default form.
  const std::vector<std::vector<double>> grads = {{0.5, -0.01, 0.0}, {-0.2, 0.02, 2.0}};
  for (const bool inside : {true, false}) {
    CAPTURE(inside);
    Tensor w = parameter({1.0, -2.0, 0.5});
    optim::Adam adam({w}, {.lr = 0.1, .eps = 1e-3, .eps_inside_sqrt = inside});
    std::vector<ScalarAdam> expected = {{1.0}, {-2.0}, {0.5}}, other = expected;
    for (const auto& g : grads) {
      set_grad(w, g);
      adam.step();
      for (std::size_t i = 0; i < 3; ++i) {
        expected[i].step(g[i], 0.1, 0.9, 0.999, 1e-3, 0, false, inside);
        other[i].step(g[i], 0.1, 0.9, 0.999, 1e-3, 0, false, !inside);
      }
      CHECK(all_close(w, {expected[0].w, expected[1].w, expected[2].w}, 1e-12, 1e-14));
      CHECK_FALSE(all_close(w, {other[0].w, other[1].w, other[2].w}, 1e-6, 1e-8));
    }
  }
}

TEST_CASE("Adam: beta1 can change mid-training, and parameters without a gradient stay put") {
  Tensor w = parameter({1.0}), idle = parameter({3.0});
  optim::Adam adam({w, idle}, {.lr = 0.01});
  ScalarAdam expected{1.0};
  set_grad(w, {0.7});
  adam.step();
  expected.step(0.7, 0.01, 0.9, 0.999, 1e-8, 0, false);
  adam.set_beta1(0.5);
  set_grad(w, {-0.3});
  adam.step();
  // The first moment keeps its history; the new beta1 applies from here on.
  expected.step(-0.3, 0.01, 0.5, 0.999, 1e-8, 0, false);
  CHECK(all_close(w, {expected.w}, 1e-12, 1e-14));
  CHECK(all_close(idle, {3.0}, 0, 0));
  CHECK(adam.step_count(1) == 0);
}

TEST_CASE("the fused float32 Adam step matches the same step composed from tensor ops") {
  Generator generator(2);
  const Tensor start = randn({1000}, generator), g = randn({1000}, generator);
  Tensor w = start.clone().requires_grad_();
  optim::Adam adam({w}, {.lr = 0.05, .weight_decay = 0.01, .decoupled_weight_decay = true});
  w.zero_grad();
  (w * g).sum().backward();
  adam.step();
  const Tensor decayed = start - start * (0.05 * 0.01);
  const Tensor m = g * 0.1, v = g * g * 0.001;
  const Tensor composed = decayed - (m / 0.1) * 0.05 / (sqrt(v / 0.001) + 1e-8);
  CHECK(all_close(w, composed, 1e-5, 1e-6));

  // With eps inside the square root, as the paper's CIFAR-10 code has it.
  Tensor inside = start.clone().requires_grad_();
  optim::Adam adam_inside({inside}, {.lr = 0.05, .eps = 1e-2, .eps_inside_sqrt = true});
  (inside * g).sum().backward();
  adam_inside.step();
  CHECK(all_close(inside, start - (m / 0.1) * 0.05 / sqrt(v / 0.001 + 1e-2), 1e-5, 1e-6));
}

TEST_CASE("SGD with Nesterov momentum follows the update worked out by hand") {
  Tensor w = parameter({1.0, 2.0});
  optim::SGD sgd({w}, {.lr = 0.1, .momentum = 0.9, .nesterov = true});
  double w0 = 1.0, v = 0;
  for (const double g : {0.5, -0.25, 1.0}) {
    set_grad(w, {g, 0.0});
    sgd.step();
    v = v == 0 ? g : 0.9 * v + g;
    w0 -= 0.1 * (g + 0.9 * v);
    CHECK(all_close(w.select(0, 0), {w0}, 1e-12, 1e-14));
  }
  CHECK_ERROR(optim::SGD({w}, {.nesterov = true}), "SGD", "Nesterov", "momentum");
}

TEST_CASE("capturable Adam takes the default path's steps, bit for bit") {
  for (const bool decoupled : {false, true}) {
    for (const DType dtype : {DType::Float32, DType::Float64}) {
      CAPTURE(decoupled);
      CAPTURE(dtype);
      Generator generator(12);
      const Tensor w0 = randn({6, 5}, generator, {.dtype = dtype});
      const Tensor b0 = randn({5}, generator, {.dtype = dtype});
      std::vector<Tensor> sets[2];
      for (auto& set : sets) set = {w0.clone().requires_grad_(), b0.clone().requires_grad_()};
      const optim::AdamOptions options{
          .lr = 0.01, .weight_decay = 0.1, .decoupled_weight_decay = decoupled};
      optim::AdamOptions capturable_options = options;
      capturable_options.capturable = true;
      optim::Adam optimisers[2] = {optim::Adam(sets[0], options),
                                   optim::Adam(sets[1], capturable_options)};
      for (int step = 0; step < 6; ++step) {
        for (int which = 0; which < 2; ++which) {
          if (step == 3) optimisers[which].set_lr(0.003);
          for (Tensor& p : sets[which]) p.zero_grad();
          const Tensor& w = sets[which][0];
          const Tensor& b = sets[which][1];
          // b has no gradient on odd steps: its count must not advance then.
          const Tensor loss =
              step % 2 == 0 ? (matmul(w, b.unsqueeze(1)).square()).sum() : (w * w).sum();
          loss.backward();
          optimisers[which].step();
        }
      }
      for (int i = 0; i < 2; ++i) {
        CAPTURE(i);
        CHECK(all_close(sets[1][i], sets[0][i], 0, 0));
        CHECK(optimisers[1].step_count(static_cast<std::size_t>(i)) ==
              optimisers[0].step_count(static_cast<std::size_t>(i)));
      }
      CHECK(optimisers[1].step_count(1) == 3);
      // Its state loads into another capturable Adam, which then steps as the first one does.
      std::vector<Tensor> copy = {sets[1][0].detach().clone().requires_grad_(),
                                  sets[1][1].detach().clone().requires_grad_()};
      optim::Adam restored(copy, capturable_options);
      restored.set_lr(0.003);
      restored.load_state_dict(optimisers[1].state_dict());
      for (auto* pair : {&sets[1], &copy}) {
        for (Tensor& p : *pair) p.zero_grad();
        (matmul((*pair)[0], (*pair)[1].unsqueeze(1)).square()).sum().backward();
      }
      optimisers[1].step();
      restored.step();
      for (int i = 0; i < 2; ++i) CHECK(all_close(copy[i], sets[1][i], 0, 0));
    }
  }
  const Tensor a = zeros({2}).requires_grad_();
  CHECK(optim::Adam({a}, {.capturable = true}).exp_avg(0).defined());  // made at construction
}

TEST_CASE("clip_grad_norm scales all gradients together only when their norm is too large") {
  Tensor a = parameter({3.0}), b = parameter({0.0, 4.0}), none = parameter({1.0});
  set_grad(a, {3.0});
  set_grad(b, {0.0, 4.0});
  CHECK(optim::clip_grad_norm({a, b, none}, 10.0) == doctest::Approx(5.0));
  CHECK(all_close(b.grad(), {0.0, 4.0}, 0, 0));
  CHECK(optim::clip_grad_norm({a, b, none}, 1.0) == doctest::Approx(5.0));
  CHECK(all_close(a.grad(), {0.6}, 1e-6, 0));
  CHECK(all_close(b.grad(), {0.0, 0.8}, 1e-6, 0));
  CHECK_FALSE(none.grad().defined());
  CHECK_ERROR(optim::clip_grad_norm({a}, 0.0), "clip_grad_norm", "positive");
}

TEST_CASE("clip_grad_norm at and just above max_norm: the documented margin of 1e-6") {
  Tensor a = parameter({3.0}), b = parameter({0.0, 4.0});  // norm 5
  set_grad(a, {3.0});
  set_grad(b, {0.0, 4.0});
  // A norm of exactly max_norm leaves the gradients as they are, bit for bit.
  CHECK(optim::clip_grad_norm({a, b}, 5.0) == 5.0);
  CHECK(all_close(a.grad(), {3.0}, 0, 0));
  CHECK(all_close(b.grad(), {0.0, 4.0}, 0, 0));
  // Half the margin above max_norm: scaled by max_norm / (norm + 1e-6), so the clipped norm
  // ends just under max_norm.
  const double max_norm = 5.0 - 0.5e-6, scale = max_norm / (5.0 + 1e-6);
  CHECK(optim::clip_grad_norm({a, b}, max_norm) == 5.0);
  CHECK(all_close(a.grad(), {3.0 * scale}, 0, 0));
  CHECK(all_close(b.grad(), {0.0, 4.0 * scale}, 0, 0));
  const double clipped = std::sqrt(square(a.grad()).sum().item() + square(b.grad()).sum().item());
  CHECK(clipped < max_norm);
  CHECK(clipped > max_norm - 2e-6);
}

TEST_CASE("clip_grad_norm_on_device clips as clip_grad_norm does, bit for bit, without a read") {
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    for (const double max_norm : {100.0, 5.0, 1.5, 0.3}) {  // above the norm (about 7), and below
      CAPTURE(dtype);
      CAPTURE(max_norm);
      Generator generator(8);
      const Tensor g1 = randn({7, 5}, generator, {.dtype = dtype}),
                   g2 = randn({11}, generator, {.dtype = dtype});
      std::vector<Tensor> sets[2];
      for (auto& set : sets) {
        set = {zeros({7, 5}, {.dtype = dtype}).requires_grad_(),
               zeros({11}, {.dtype = dtype}).requires_grad_(), zeros({2}).requires_grad_()};
        (set[0] * g1).sum().backward();
        (set[1] * g2).sum().backward();  // the third has no gradient
      }
      const double host = optim::clip_grad_norm(sets[0], max_norm);
      const Tensor device = optim::clip_grad_norm_on_device(sets[1], max_norm);
      CHECK(device.dtype() == DType::Float64);
      CHECK(device.item() == host);
      for (int i = 0; i < 2; ++i) CHECK(all_close(sets[1][i].grad(), sets[0][i].grad(), 0, 0));
      CHECK_FALSE(sets[1][2].grad().defined());
    }
  }
  CHECK(optim::clip_grad_norm_on_device({parameter({1.0})}, 1.0).item() == 0.0);  // no gradients
  CHECK_ERROR(optim::clip_grad_norm_on_device({}, 0.0), "clip_grad_norm_on_device", "positive");
}

TEST_CASE("clip_grad_norm_each clips every gradient on its own, to exactly max_norm") {
  Tensor a = parameter({3.0, 4.0}), b = parameter({0.3, 0.4}), none = parameter({1.0});
  set_grad(a, {3.0, 4.0});  // norm 5
  set_grad(b, {0.3, 0.4});  // norm 0.5
  CHECK(optim::clip_grad_norm_each({a, b, none}, 2.0) == doctest::Approx(5.0));
  CHECK(all_close(a.grad(), {1.2, 1.6}, 1e-12, 0));  // 2 / 5 of itself: norm 2 exactly
  CHECK(all_close(b.grad(), {0.3, 0.4}, 0, 0));      // under max_norm: bit for bit
  CHECK_FALSE(none.grad().defined());
  // A non-finite gradient anywhere stops it before anything is scaled.
  set_grad(a, {3.0, 4.0});
  set_grad(b, {std::nan(""), 0.0});
  CHECK_ERROR(optim::clip_grad_norm_each({a, b}, 2.0), "clip_grad_norm_each", "gradient 1 of 2",
              "not finite");
  CHECK(all_close(a.grad(), {3.0, 4.0}, 0, 0));
  CHECK_ERROR(optim::clip_grad_norm_each({a}, -1.0), "clip_grad_norm_each", "positive");
}

TEST_CASE("learning-rate schedules give the rates worked out by hand") {
  CHECK(optim::ConstantSchedule{0.1}(1000) == 0.1);
  const optim::StepSchedule step{1.0, 10, 0.5};
  CHECK(step(9) == 1.0);
  CHECK(step(10) == 0.5);
  CHECK(step(25) == 0.25);
  const optim::InverseSqrtSchedule transformer{2.0, 4};
  CHECK(transformer(0) == doctest::Approx(0.5));   // warm-up: 2 * 1/4
  CHECK(transformer(3) == doctest::Approx(2.0));   // the peak at step = warmup
  CHECK(transformer(15) == doctest::Approx(1.0));  // 2 * sqrt(4 / 16)
  const optim::ConstantThenLinearDecaySchedule cifar{0.003, 100, 200};
  CHECK(cifar(99) == 0.003);
  CHECK(cifar(150) == doctest::Approx(0.0015));
  CHECK(cifar(200) == 0.0);
  CHECK_ERROR(step(-1), "StepSchedule", "-1");
  CHECK_ERROR((optim::ConstantThenLinearDecaySchedule{1, 5, 5}(0)),
              "ConstantThenLinearDecaySchedule", "5");
}

TEST_CASE("Adam refuses bad options and parameters") {
  Tensor w = parameter({1.0});
  CHECK_ERROR(optim::Adam({w}, {.beta1 = 1.0}), "Adam", "beta1", "[0, 1)");
  CHECK_ERROR(optim::Adam({w}, {.eps = 0}), "Adam", "eps");
  CHECK_ERROR(optim::Adam({w.detach()}, {}), "Adam", "parameter 0", "requires grad");
  optim::Adam adam({w});
  CHECK_ERROR(adam.set_lr(-1), "Adam", "-1");
}
