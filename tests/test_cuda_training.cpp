// CPU-versus-CUDA parity of training: one fused Adam or AdamW update, SGD (momentum, Nesterov,
// weight decay) on hand-set gradients, clip_grad_norm (the norm it returns and the clipped
// gradients), and a few full training steps of a small model with a LayerNorm, through
// cross-entropy, clipping and each optimizer, with the optimizer built before the model moved
// to the GPU. Parameters are compared after the steps. And the host's waits for the device
// in a training step: only where it must read a result back.
//
// Tolerances: an optimizer update is pointwise (testing::elementwise per step, times the
// steps). The norm of clip_grad_norm is a sum over every gradient value (testing::summed).
// Full training steps compound the forward and backward differences of each step into the
// parameters: float64 models, held to 1e-10, so that Adam's division by sqrt(v), which
// magnifies differences in small gradients, cannot hide a real mismatch behind a loose bound.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cuda_parity.h"
#include "module_gradcheck.h"

using namespace normgrad;
using testing::elementwise;
using testing::mismatch;
using testing::normal;
using testing::parity_device;
using testing::Tolerance;

namespace {

// Parameters with gradients set by hand, on one device.
std::vector<Tensor> parameters_with_grads(Device device, DType dtype, std::uint64_t seed) {
  std::vector<Tensor> parameters;
  for (const Shape& shape : {Shape{7, 5}, Shape{5}, Shape{3, 4, 129}}) {
    Tensor parameter = normal(shape, seed++, dtype).to(device).detach().requires_grad_();
    parameter.set_grad(normal(shape, seed++, dtype).to(device));
    parameters.push_back(parameter);
  }
  return parameters;
}

// Runs `steps` updates of an optimizer made by `make` on both devices and compares the
// parameters after each step.
std::string optimizer_mismatch(
    const std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>& make, DType dtype,
    int steps) {
  const std::vector<Tensor> host = parameters_with_grads(Device::cpu(), dtype, 1);
  const std::vector<Tensor> device = parameters_with_grads(parity_device(), dtype, 1);
  const std::unique_ptr<optim::Optimizer> host_optimizer = make(host);
  const std::unique_ptr<optim::Optimizer> device_optimizer = make(device);
  const Tolerance per_step = elementwise(dtype);
  for (int step = 1; step <= steps; ++step) {
    host_optimizer->step();
    device_optimizer->step();
    for (std::size_t i = 0; i < host.size(); ++i) {
      const std::string found =
          mismatch(host[i], device[i], {per_step.rtol * step, per_step.atol * step},
                   "parameter " + std::to_string(i) + " after step " + std::to_string(step));
      if (!found.empty()) return found;
    }
  }
  return "";
}

// A small classifier: Linear, LayerNorm, tanh, Linear.
struct Classifier : nn::Module {
  std::shared_ptr<nn::Linear> fc1, fc2;
  std::shared_ptr<nn::Norm> norm;
  explicit Classifier(const char* norm_spec) {
    fc1 = register_module(
        "fc1", std::make_shared<nn::Linear>(6, 16, nn::LinearOptions{.dtype = DType::Float64}));
    norm = register_module("norm",
                           nn::make_norm(norm_spec, 16, nn::NormLayout::Features, DType::Float64));
    fc2 = register_module(
        "fc2", std::make_shared<nn::Linear>(16, 4, nn::LinearOptions{.dtype = DType::Float64}));
  }
  Tensor forward(const Tensor& x) { return fc2->forward(tanh(norm->forward(fc1->forward(x)))); }
};

// Trains two copies of the classifier, one per device, for a few steps with the optimizer
// `make` gives, and compares their parameters.
std::string training_mismatch(
    const std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>& make,
    const char* norm_spec, double max_norm) {
  Classifier host(norm_spec), device(norm_spec);
  testing::randomise(host, 2);
  testing::randomise(device, 2);
  const std::unique_ptr<optim::Optimizer> host_optimizer = make(host.parameters());
  const std::unique_ptr<optim::Optimizer> device_optimizer = make(device.parameters());
  device.to(parity_device());  // after the optimizer took its parameters' handles
  for (int step = 0; step < 4; ++step) {
    const Tensor x = normal({32, 6}, 10 + static_cast<std::uint64_t>(step), DType::Float64);
    Generator generator(20 + static_cast<std::uint64_t>(step));
    const Tensor targets = randint(0, 4, {32}, generator);
    for (const bool on_device : {false, true}) {
      Classifier& model = on_device ? device : host;
      optim::Optimizer& optimizer = on_device ? *device_optimizer : *host_optimizer;
      const Device where = on_device ? parity_device() : Device::cpu();
      const Tensor loss = nn::cross_entropy(model.forward(x.to(where)), targets.to(where),
                                            {.label_smoothing = 0.1});
      optimizer.zero_grad();
      loss.backward();
      if (max_norm > 0) optim::clip_grad_norm(model.parameters(), max_norm);
      optimizer.step();
    }
  }
  const nn::NamedTensors host_parameters = host.named_parameters();
  const nn::NamedTensors device_parameters = device.named_parameters();
  for (std::size_t i = 0; i < host_parameters.size(); ++i) {
    if (device_parameters[i].second.device() != parity_device())
      return device_parameters[i].first + " left the GPU";
    const std::string found = mismatch(host_parameters[i].second, device_parameters[i].second,
                                       {1e-10, 1e-10}, host_parameters[i].first);
    if (!found.empty()) return found;
  }
  return "";
}

using OptimizerFactory = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;

const OptimizerFactory adam = [](std::vector<Tensor> p) {
  return std::make_unique<optim::Adam>(std::move(p),
                                       optim::AdamOptions{.lr = 1e-2, .weight_decay = 1e-2});
};
const OptimizerFactory adamw = [](std::vector<Tensor> p) {
  return std::make_unique<optim::Adam>(
      optim::AdamW(std::move(p), {.lr = 1e-2, .weight_decay = 0.1}));
};
const OptimizerFactory adam_eps_inside = [](std::vector<Tensor> p) {
  return std::make_unique<optim::Adam>(
      std::move(p), optim::AdamOptions{.lr = 1e-2, .eps = 1e-4, .eps_inside_sqrt = true});
};
const OptimizerFactory sgd_momentum = [](std::vector<Tensor> p) {
  return std::make_unique<optim::SGD>(
      std::move(p), optim::SGDOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-3});
};
const OptimizerFactory sgd_nesterov = [](std::vector<Tensor> p) {
  return std::make_unique<optim::SGD>(
      std::move(p), optim::SGDOptions{.lr = 0.05, .momentum = 0.8, .nesterov = true});
};
const OptimizerFactory sgd_plain = [](std::vector<Tensor> p) {
  return std::make_unique<optim::SGD>(std::move(p), optim::SGDOptions{.lr = 0.1});
};

}  // namespace

TEST_CASE("cuda parity: Adam, AdamW and SGD updates on hand-set gradients") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    INFO(dtype);
    CHECK_NO_MISMATCH(optimizer_mismatch(adam, dtype, 3));
    CHECK_NO_MISMATCH(optimizer_mismatch(adamw, dtype, 3));
    CHECK_NO_MISMATCH(optimizer_mismatch(adam_eps_inside, dtype, 3));
    CHECK_NO_MISMATCH(optimizer_mismatch(sgd_momentum, dtype, 3));
    CHECK_NO_MISMATCH(optimizer_mismatch(sgd_nesterov, dtype, 3));
    CHECK_NO_MISMATCH(optimizer_mismatch(sgd_plain, dtype, 3));
  }
}

TEST_CASE("cuda parity: clip_grad_norm returns the same norm and clips the same way") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    for (const double max_norm : {1.0, 1e6}) {  // clipping, and a norm under the limit
      INFO(dtype << ", max_norm " << max_norm);
      const std::vector<Tensor> host = parameters_with_grads(Device::cpu(), dtype, 3);
      const std::vector<Tensor> device = parameters_with_grads(parity_device(), dtype, 3);
      const double host_norm = optim::clip_grad_norm(host, max_norm);
      const double device_norm = optim::clip_grad_norm(device, max_norm);
      // The norm sums 1588 squares (about 1 each).
      const Tolerance norm_tolerance = testing::summed(dtype, 1588, 1.0);
      CHECK(std::fabs(host_norm - device_norm) <=
            norm_tolerance.atol / (2 * host_norm) + norm_tolerance.rtol * host_norm);
      for (std::size_t i = 0; i < host.size(); ++i)
        CHECK_NO_MISMATCH(mismatch(host[i].grad(), device[i].grad(),
                                   {elementwise(dtype).rtol * 10, elementwise(dtype).atol},
                                   "clipped gradient " + std::to_string(i)));
    }
  }
}

TEST_CASE("cuda parity: a few training steps of a small model end in the same parameters") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const char* norm : {"layernorm", "rmsnorm"}) {
    INFO(norm);
    CHECK_NO_MISMATCH(training_mismatch(adam, norm, 0));
    CHECK_NO_MISMATCH(training_mismatch(adamw, norm, 0.5));
    CHECK_NO_MISMATCH(training_mismatch(sgd_momentum, norm, 0.5));
    CHECK_NO_MISMATCH(training_mismatch(sgd_nesterov, norm, 0));
  }
}

TEST_CASE("a training step on the GPU waits for the device only where it must read back") {
  SKIP_WITHOUT_CUDA();
  // A normed GRU (its step fused with its norms), a linear output, cross-entropy, clipping and
  // Adam, in float32 as examples train.
  Generator generator(3);
  nn::Gru gru(6, 16, {.cell = {.norm = "rmsnorm"}}, generator);
  nn::Linear output(16, 5);
  gru.to(Device::cuda());
  output.to(Device::cuda());
  std::vector<Tensor> parameters = gru.parameters();
  for (const Tensor& p : output.parameters()) parameters.push_back(p);
  optim::Adam optimizer(parameters, {.lr = 1e-3});
  const Tensor x = randn({7, 4, 6}, generator), targets = randint(0, 5, {7 * 4}, generator);
  const auto step = [&] {
    const Tensor states = gru.forward(x.to(Device::cuda())).output;  // copies in: no wait
    const Tensor loss =
        nn::cross_entropy(output.forward(states).reshape({28, 5}), targets.to(Device::cuda()));
    optimizer.zero_grad();
    loss.backward();
    optim::clip_grad_norm(parameters, 1.0);
    optimizer.step();
    return loss;
  };
  step();  // the first step fills the allocator's cache
  const std::int64_t before = cuda::host_waits();
  const Tensor loss = step();
  // cross_entropy's check of its targets, forward and backward, and the norm clip_grad_norm
  // returns: nothing else in the step reads the device.
  CHECK(cuda::host_waits() - before == 3);
  (void)loss.item();
  CHECK(cuda::host_waits() - before == 4);
}
