#include "autograd/gradcheck.h"

#include <cmath>
#include <sstream>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "base/error.h"
#include "core/generator.h"

namespace normgrad {

namespace {

double projected(const DifferentiableFunction& function, const std::vector<Tensor>& inputs,
                 const Tensor& v) {
  NoGradGuard no_grad;
  return sum(function(inputs) * v).item();
}

}  // namespace

GradcheckResult gradcheck(const DifferentiableFunction& function,
                          const std::vector<Tensor>& inputs, GradcheckOptions options) {
  std::vector<Tensor> leaves;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& input = inputs[i];
    NG_CHECK(input.defined(), "gradcheck", "input ", i, " is undefined");
    NG_CHECK(input.dtype() == DType::Float64 || !input.requires_grad(), "gradcheck", "input ",
             i, " must be float64 for finite differences to be meaningful, got ", input.dtype());
    NG_CHECK(input.device().is_cpu(), "gradcheck", "input ", i, " must be on the cpu, got ",
             input.device());
    // Fresh contiguous leaves, so perturbing them touches nothing else.
    Tensor leaf = input.detach().clone();
    if (input.requires_grad()) leaf.set_requires_grad(true);
    leaves.push_back(leaf);
  }

  Tensor output = function(leaves);
  NG_CHECK(output.dtype() == DType::Float64, "gradcheck", "the function must return float64, got ",
           output.dtype());
  Generator generator(options.seed);
  const Tensor v = randn(output.shape(), generator, {.dtype = DType::Float64});
  NG_CHECK(output.requires_grad(), "gradcheck",
           "the output does not require grad: no input that requires grad reaches it");
  sum(output * v).backward();

  GradcheckResult result;
  double worst = -1;
  std::size_t checked = 0;
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    Tensor& leaf = leaves[i];
    if (!leaf.requires_grad()) continue;
    const Tensor grad = leaf.grad();
    const std::vector<double> analytic =
        grad.defined() ? grad.to_vector<double>() : std::vector<double>(leaf.numel(), 0.0);
    double* x = leaf.data_ptr<double>();
    for (std::int64_t j = 0; j < leaf.numel(); ++j) {
      const double original = x[j];
      const double h = options.eps * std::max(1.0, std::fabs(original));
      x[j] = original + h;
      const double plus = projected(function, leaves, v);
      x[j] = original - h;
      const double minus = projected(function, leaves, v);
      x[j] = original;
      const double numeric = (plus - minus) / (2 * h);
      const double error = std::fabs(analytic[j] - numeric);
      const double allowed = options.atol + options.rtol * std::fabs(numeric);
      ++checked;
      if (!(error <= allowed) && error - allowed > worst) {
        worst = error - allowed;
        std::ostringstream message;
        message << "gradcheck: input " << i << " (shape " << to_string(leaf.shape())
                << "), element " << j << ": analytic " << analytic[j] << " vs numeric "
                << numeric << " (difference " << error << ", allowed " << allowed << ")";
        result.ok = false;
        result.message = message.str();
      }
    }
  }
  if (result.ok)
    result.message = "gradcheck: " + std::to_string(checked) + " partial derivatives agree";
  return result;
}

}  // namespace normgrad
