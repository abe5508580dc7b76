#pragma once
// What the CPU-versus-CUDA parity tests share (test_cuda_*.cpp, and the op families' GPU
// sections in test_<family>.cpp): skipping a case when no GPU is present, running one
// computation on copies of the same inputs on both devices (forward, then backward with the
// same upstream gradient), and comparing values and gradients within a stated tolerance, or
// bit for bit.
//
//   SKIP_PARITY_WITHOUT_CUDA();
//   CHECK_NO_MISMATCH(parity_mismatch([](const Inputs& in) { return exp(in[0].t()); },
//                                     {randn({3, 4}, generator)}, elementwise(DType::Float32)));
//
// The function sees its inputs as leaves on one device; views (transposes, slices) taken
// inside it are therefore non-contiguous on both devices. Constants it captures must be moved
// to its inputs' device (`on_device_of(constant, in[0])`).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "helpers.h"

// Ends the calling test case with a message when no CUDA device is present, so that the
// suite passes on machines without a GPU and says what it did not check.
#define SKIP_WITHOUT_CUDA()                  \
  do {                                       \
    if (!::normgrad::cuda::is_available()) { \
      MESSAGE("skipped: no CUDA device");    \
      return;                                \
    }                                        \
  } while (false)

// The same for the parity cases, which compare the CPU with testing::parity_device(). Built
// with NORMGRAD_PARITY_ON_CPU defined, that device is the CPU and these cases run everywhere:
// every parity then holds trivially, but the cases' own shapes and calls are exercised on a
// machine without a GPU.
#ifdef NORMGRAD_PARITY_ON_CPU
#define SKIP_PARITY_WITHOUT_CUDA() \
  do {                             \
  } while (false)
#else
#define SKIP_PARITY_WITHOUT_CUDA() SKIP_WITHOUT_CUDA()
#endif

// Passes when the expression (a mismatch description, "" when there is none) is empty; prints
// the description otherwise. Variadic, so that braced lists and lambdas pass through.
#define CHECK_NO_MISMATCH(...)                              \
  do {                                                      \
    const std::string mismatch_description = (__VA_ARGS__); \
    INFO("mismatch: " << mismatch_description);             \
    CHECK(mismatch_description.empty());                    \
  } while (false)

namespace testing {

// The device the parity cases compare with the CPU (see SKIP_PARITY_WITHOUT_CUDA).
inline normgrad::Device parity_device() {
#ifdef NORMGRAD_PARITY_ON_CPU
  return normgrad::Device::cpu();
#else
  return normgrad::Device::cuda();
#endif
}

using Inputs = std::vector<normgrad::Tensor>;
using Function = std::function<normgrad::Tensor(const Inputs&)>;

// |cuda - cpu| <= atol + rtol |cpu| for every element.
struct Tolerance {
  double rtol = 0;
  double atol = 0;
};

// Equal values (0 and -0 count as equal here; bits_mismatch tells them apart).
constexpr Tolerance exact{0, 0};

// Elementwise ops: every value is one rounding (or a few ulps of a libm function such as exp,
// tanh, erf or pow) away from the exact result on either device, so the two agree to a few
// float32 ulps (2^-23 = 1.2e-7 each): rtol 1e-5 leaves two orders of magnitude for CUDA's
// math functions and fused multiply-adds. atol covers results next to a zero of the function
// and backward passes that cancel, where a relative error means nothing: gelu' near
// x = -0.75, or tanh' = dy (1 - y^2) for |x| > 4, where 2 ulps of y (1.2e-7) move 1 - y^2 by
// 2.4e-7 and dy multiplies that (atol 5e-6 allows |dy| up to about 20).
// float64: the same reasoning with 2^-52 = 2.2e-16 ulps.
inline Tolerance elementwise(normgrad::DType dtype) {
  return dtype == normgrad::DType::Float64 ? Tolerance{1e-12, 1e-14} : Tolerance{1e-5, 5e-6};
}

// Sums of `terms` terms of magnitude up to `term_scale` (reductions, matrix products,
// convolutions, the batch sums of dgain and dbias), which CPU and GPU add in different orders
// (blocked pairwise sums and BLAS k-blocking against tree reductions and cuBLAS tiles). A
// pairwise order errs by at most about log2(n) eps sum|terms| (1.2e-6 sum|terms| for n = 2^20
// in float32, eps = 2^-24), and in practice far less, since rounding errors of random sign
// cancel. The bound used, 1e-6 sum|terms| in float32 and 1e-14 in float64 (with sum|terms| <=
// terms * term_scale), is that worst case for n around 2^16 and well above the typical error
// at every size tested; a lost or doubled term moves a sum by a whole term, and the exact sums
// of test_reduce.cpp's GPU section catch it. The relative part is the elementwise one.
inline Tolerance summed(normgrad::DType dtype, double terms, double term_scale = 1.0) {
  const Tolerance pointwise = elementwise(dtype);
  const double per_term = dtype == normgrad::DType::Float64 ? 1e-14 : 1e-6;
  return {pointwise.rtol, std::max(pointwise.atol, per_term * terms * term_scale)};
}

// The fused normalisers, forward: statistics are accumulated in double on the CPU and may be
// reduced in another order (or in float32 before the final combination) on the GPU; the bound
// is the one the fused kernels are held to against their composed twins in
// test_norm.cpp (2e-5 in float32, 1e-11 in float64).
inline Tolerance norm_values(normgrad::DType dtype) {
  return dtype == normgrad::DType::Float64 ? Tolerance{1e-11, 1e-11} : Tolerance{2e-5, 2e-5};
}
// Their backward passes subtract row means of dy-terms from dy (cancellation), and dgain and
// dbias sum over rows: ten times the forward bound, as in test_norm.cpp.
inline Tolerance norm_gradients(normgrad::DType dtype) {
  const Tolerance values = norm_values(dtype);
  return {values.rtol * 10, values.atol * 10};
}

// Normal draws: the same Philox words on both devices, but Box-Muller's log and cos come from
// the C library on the CPU and from CUDA's maths library on the GPU, which may differ in the
// last bit of a double (a few ulps at most; values are O(1), so absolute bounds suffice near
// cos's zeros). float32 draws are rounded from those doubles: 1 ulp when a double lies near a
// rounding midpoint.
inline Tolerance normal_draws(normgrad::DType dtype) {
  return dtype == normgrad::DType::Float64 ? Tolerance{4e-15, 4e-15} : Tolerance{2.4e-7, 2.4e-7};
}

// `tensor` on the device of `like` (a no-op when it is there already): for constants that a
// parity function captures.
inline normgrad::Tensor on_device_of(const normgrad::Tensor& tensor, const normgrad::Tensor& like) {
  return tensor.to(like.device());
}

// "" when `actual` (from the GPU) and `expected` (from the CPU) have the same shape and dtype
// and agree within `tolerance`; otherwise what differs, with the worst element.
inline std::string mismatch(const normgrad::Tensor& expected, const normgrad::Tensor& actual,
                            Tolerance tolerance, const std::string& what = "values") {
  if (expected.defined() != actual.defined())
    return what + ": defined on one device only (cpu " + (expected.defined() ? "yes" : "no") +
           ", cuda " + (actual.defined() ? "yes" : "no") + ")";
  if (!expected.defined()) return "";
  std::ostringstream out;
  if (expected.shape() != actual.shape() || expected.dtype() != actual.dtype()) {
    out << what << ": cpu gives " << expected.dtype() << " " << expected.shape() << ", cuda "
        << actual.dtype() << " " << actual.shape();
    return out.str();
  }
  const std::vector<double> cpu = expected.to_vector<double>();
  const std::vector<double> gpu = actual.to_vector<double>();
  bool failed = false;
  double worst_ratio = -1;
  std::size_t worst = 0;
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    if (cpu[i] == gpu[i] || (std::isnan(cpu[i]) && std::isnan(gpu[i]))) continue;
    const double error = std::fabs(cpu[i] - gpu[i]);
    const double allowed = tolerance.atol + tolerance.rtol * std::fabs(cpu[i]);
    if (!(error <= allowed)) failed = true;
    const double ratio = allowed > 0 && !std::isnan(error) ? error / allowed : INFINITY;
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      worst = i;
    }
  }
  if (!failed) return "";
  out.precision(17);
  out << what << " " << expected.shape() << " " << expected.dtype() << ": worst at flat index "
      << worst << ", cpu " << cpu[worst] << ", cuda " << gpu[worst] << " (error "
      << std::fabs(cpu[worst] - gpu[worst]) << ", allowed atol " << tolerance.atol << " + rtol "
      << tolerance.rtol << " * |cpu|)";
  return out.str();
}

// "" when a and b hold the same bits (same dtype and shape); otherwise the first difference.
inline std::string bits_mismatch(const normgrad::Tensor& a, const normgrad::Tensor& b,
                                 const std::string& what = "values") {
  using normgrad::DType;
  if (!a.defined() || !b.defined()) return what + ": undefined";
  std::ostringstream out;
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) {
    out << what << ": " << a.dtype() << " " << a.shape() << " against " << b.dtype() << " "
        << b.shape();
    return out.str();
  }
  const auto first_difference = [&](const auto& x, const auto& y) -> std::string {
    for (std::size_t i = 0; i < x.size(); ++i)
      if (std::memcmp(&x[i], &y[i], sizeof(x[i])) != 0) {
        out.precision(17);
        out << what << " " << a.shape() << ": first different bits at flat index " << i << ": "
            << x[i] << " against " << y[i];
        return out.str();
      }
    return "";
  };
  switch (a.dtype()) {
    case DType::Float32:
      return first_difference(a.to_vector<float>(), b.to_vector<float>());
    case DType::Float64:
      return first_difference(a.to_vector<double>(), b.to_vector<double>());
    case DType::Int64:
      return first_difference(a.to_vector<std::int64_t>(), b.to_vector<std::int64_t>());
    case DType::BFloat16:
      return first_difference(a.to_vector<float>(), b.to_vector<float>());
  }
  return what + ": unknown dtype";
}

// One run of a computation: its output and gradients, copied to the host.
struct Evaluation {
  normgrad::Device output_device;
  normgrad::Tensor output;
  std::vector<normgrad::Tensor> input_grads;   // undefined where no gradient arrived
  normgrad::nn::NamedTensors parameter_grads;  // when a module took part
};

// Runs `function` on copies of `inputs` on `device` (the floating ones as leaves that require
// grad) and, when its output requires grad, backward with an upstream gradient drawn from
// `upstream_seed` on the host, so that both devices receive the same one. With a module, its
// gradients are dropped and it is moved to `device` first, and its parameters' gradients are
// returned too.
inline Evaluation evaluate(const Function& function, const Inputs& inputs, normgrad::Device device,
                           normgrad::nn::Module* module = nullptr,
                           std::uint64_t upstream_seed = 4242) {
  using namespace normgrad;
  if (module != nullptr) {
    module->zero_grad();
    module->to(device);
  }
  Inputs leaves;
  for (const Tensor& input : inputs) {
    Tensor leaf = input.detach().to(device).detach();
    if (is_floating(leaf.dtype())) leaf.requires_grad_();
    leaves.push_back(leaf);
  }
  const Tensor output = function(leaves);
  Evaluation result;
  result.output_device = output.device();
  result.output = output.detach().to(Device::cpu());
  if (output.requires_grad()) {
    Generator generator(upstream_seed);
    const Tensor upstream = randn(output.shape(), generator, {.dtype = output.dtype()});
    output.backward(upstream.to(device));
  }
  const auto host = [](const Tensor& t) { return t.defined() ? t.to(Device::cpu()) : Tensor(); };
  for (const Tensor& leaf : leaves) result.input_grads.push_back(host(leaf.grad()));
  if (module != nullptr)
    for (const auto& [name, parameter] : module->named_parameters())
      result.parameter_grads.emplace_back(name, host(parameter.grad()));
  return result;
}

// "" when a CPU and a CUDA evaluation agree: the CUDA output lies on the GPU, values within
// `values`, the gradient of input i within `gradients[i]` (the last entry serving the inputs
// beyond and the module's parameters).
inline std::string evaluations_mismatch(const Evaluation& cpu, const Evaluation& gpu,
                                        Tolerance values, const std::vector<Tolerance>& gradients) {
  if (gpu.output_device != parity_device())
    return "the output of the CUDA run lies on " + gpu.output_device.str();
  const auto gradient_tolerance = [&](std::size_t i) {
    return gradients.empty() ? values : gradients[std::min(i, gradients.size() - 1)];
  };
  std::string found = mismatch(cpu.output, gpu.output, values, "output");
  for (std::size_t i = 0; found.empty() && i < cpu.input_grads.size(); ++i)
    found = mismatch(cpu.input_grads[i], gpu.input_grads[i], gradient_tolerance(i),
                     "gradient of input " + std::to_string(i));
  for (std::size_t i = 0; found.empty() && i < cpu.parameter_grads.size(); ++i)
    found = mismatch(cpu.parameter_grads[i].second, gpu.parameter_grads[i].second,
                     gradient_tolerance(gradients.size()),
                     "gradient of " + cpu.parameter_grads[i].first);
  return found;
}

// Runs `function` on the CPU and on the GPU (see evaluate) and compares the two, with one
// gradient tolerance per input (or one for all).
inline std::string parity_mismatch(const Function& function, const Inputs& inputs, Tolerance values,
                                   const std::vector<Tolerance>& gradients) {
  const Evaluation cpu = evaluate(function, inputs, normgrad::Device::cpu());
  const Evaluation gpu = evaluate(function, inputs, parity_device());
  return evaluations_mismatch(cpu, gpu, values, gradients);
}
inline std::string parity_mismatch(const Function& function, const Inputs& inputs, Tolerance values,
                                   Tolerance gradients) {
  return parity_mismatch(function, inputs, values, std::vector<Tolerance>{gradients});
}
inline std::string parity_mismatch(const Function& function, const Inputs& inputs,
                                   Tolerance tolerance) {
  return parity_mismatch(function, inputs, tolerance, tolerance);
}

// The same for a module that `function` calls: the module is moved to the CPU and run, then
// moved to the GPU (where it stays) and run again; parameter gradients are compared too. The
// first run must not change the module's state in a way that alters the second (BatchNorm's
// running estimates only matter in evaluation mode).
inline std::string module_parity_mismatch(normgrad::nn::Module& module, const Function& function,
                                          const Inputs& inputs, Tolerance values,
                                          Tolerance gradients) {
  const Evaluation cpu = evaluate(function, inputs, normgrad::Device::cpu(), &module);
  const Evaluation gpu = evaluate(function, inputs, parity_device(), &module);
  return evaluations_mismatch(cpu, gpu, values, {gradients});
}

// "" when two evaluations (on the same device) agree bit for bit, gradients included.
inline std::string evaluations_bits_mismatch(const Evaluation& first, const Evaluation& second) {
  std::string found = bits_mismatch(first.output, second.output, "output");
  for (std::size_t i = 0; found.empty() && i < first.input_grads.size(); ++i)
    if (first.input_grads[i].defined() || second.input_grads[i].defined())
      found = bits_mismatch(first.input_grads[i], second.input_grads[i],
                            "gradient of input " + std::to_string(i));
  for (std::size_t i = 0; found.empty() && i < first.parameter_grads.size(); ++i)
    found = bits_mismatch(first.parameter_grads[i].second, second.parameter_grads[i].second,
                          "gradient of " + first.parameter_grads[i].first);
  return found;
}

// Host tensors from a fixed seed, for parity inputs.
inline normgrad::Tensor normal(const normgrad::Shape& shape, std::uint64_t seed,
                               normgrad::DType dtype = normgrad::DType::Float32,
                               double scale = 1.0) {
  normgrad::Generator generator(seed);
  return normgrad::randn(shape, generator, {.dtype = dtype}) * scale;
}
inline normgrad::Tensor uniform(const normgrad::Shape& shape, std::uint64_t seed, double low,
                                double high, normgrad::DType dtype = normgrad::DType::Float32) {
  normgrad::Generator generator(seed);
  return normgrad::rand(shape, generator, {.dtype = dtype}) * (high - low) + low;
}

// Integers drawn uniformly from [low, high), from a fixed seed: indices and targets.
inline normgrad::Tensor indices(std::int64_t low, std::int64_t high, const normgrad::Shape& shape,
                                std::uint64_t seed) {
  normgrad::Generator generator(seed);
  return normgrad::randint(low, high, shape, generator);
}

// A normaliser's inputs: x (mean 0.5, scale 3, as in test_norm.cpp), gain and bias.
inline Inputs norm_inputs(const normgrad::Shape& x_shape, const normgrad::Shape& affine_shape,
                          normgrad::DType dtype) {
  return {normal(x_shape, 1, dtype, 3.0) + 0.5, normal(affine_shape, 2, dtype),
          normal(affine_shape, 3, dtype)};
}

// Gradient tolerances for a normaliser's (x, gain, bias): dx is a per-row formula
// (norm_gradients); dgain and dbias sum over `rows` rows, in another order on the GPU (summed,
// terms of |dy x̂| below about 8), whichever bound is larger.
inline std::vector<Tolerance> affine_gradients(normgrad::DType dtype, double rows) {
  const Tolerance dx = norm_gradients(dtype);
  const Tolerance sums = summed(dtype, rows, 8.0);
  const Tolerance affine{dx.rtol, std::max(dx.atol, sums.atol)};
  return {dx, affine, affine};
}

}  // namespace testing
