// Tensor factories: constant fills, ranges, host values and seeded random draws.

#include <cmath>
#include <cstring>
#include <optional>

#include "backends/backend.h"
#include "base/checked.h"
#include "base/error.h"
#include "core/generator.h"
#include "core/graph_draws.h"
#include "core/tensor.h"
#include "core/tensor_internal.h"

namespace normgrad {

namespace {

Tensor finish(Tensor tensor, const TensorOptions& options) {
  if (options.requires_grad) tensor.set_requires_grad(true);
  return tensor;
}

Tensor filled(const Shape& shape, double value, const TensorOptions& options, const char* op) {
  Tensor out = detail::make_tensor(shape, options.dtype, options.device, op);
  if (out.numel() > 0) detail::backend_of(out).fill(detail::ref(out), value);
  return finish(out, options);
}

Tensor random_tensor(const Shape& shape, Generator& generator, const TensorOptions& options,
                     backend::RandomKind kind, double alpha, double beta, const char* op) {
  Tensor out = detail::make_tensor(shape, options.dtype, options.device, op);
  const auto count = static_cast<std::uint64_t>(out.numel());
  backend::Backend& backend = detail::backend_of(out);
  // A draw that a CUDA graph records reads the counters each replay sets (core/cuda.h).
  const std::optional<cuda::detail::CapturedDraw> captured =
      options.device.is_cuda() ? cuda::detail::captured_draw(options.device.index, generator, count)
                               : std::nullopt;
  if (captured) {
    if (count > 0)
      backend.random_with_counters(detail::ref(out), kind, detail::ref(captured->counters),
                                   captured->offset, alpha, beta);
  } else {
    const std::uint64_t offset = generator.reserve(count);
    if (count > 0) backend.random(detail::ref(out), kind, generator.seed(), offset, alpha, beta);
  }
  return finish(out, options);
}

}  // namespace

Tensor empty(const Shape& shape, TensorOptions options) {
  return finish(detail::make_tensor(shape, options.dtype, options.device, "empty"), options);
}
Tensor zeros(const Shape& shape, TensorOptions options) { return filled(shape, 0, options, "zeros"); }
Tensor ones(const Shape& shape, TensorOptions options) { return filled(shape, 1, options, "ones"); }
Tensor full(const Shape& shape, double value, TensorOptions options) {
  return filled(shape, value, options, "full");
}

Tensor zeros_like(const Tensor& like) {
  return zeros(like.shape(), {.dtype = like.dtype(), .device = like.device()});
}
Tensor ones_like(const Tensor& like) {
  return ones(like.shape(), {.dtype = like.dtype(), .device = like.device()});
}
Tensor empty_like(const Tensor& like) {
  return detail::make_tensor(like.shape(), like.dtype(), like.device());
}

Tensor arange(double start, double end, double step, TensorOptions options) {
  NG_CHECK(step != 0 && std::isfinite(step), "arange", "step must be finite and non-zero, got ",
           step);
  NG_CHECK(std::isfinite(start) && std::isfinite(end), "arange", "bounds must be finite, got [",
           start, ", ", end, ")");
  // The count is computed and checked in double before it becomes an int64: converting a double
  // beyond int64's range is undefined behaviour, and (end - start) / step may itself overflow.
  const double count = std::ceil((end - start) / step);
  NG_CHECK(std::isfinite(count) && count < 0x1p62, "arange", "[", start, ", ", end, ") in steps of ",
           step, " has ", count, " elements, more than a tensor can hold");
  const auto n = static_cast<std::int64_t>(count > 0 ? count : 0);
  Tensor out = detail::make_tensor({n}, options.dtype, options.device, "arange");
  if (n > 0) detail::backend_of(out).arange(detail::ref(out), start, step);
  return finish(out, options);
}

Tensor arange(double end, TensorOptions options) { return arange(0, end, 1, options); }

Tensor scalar_tensor(double value, TensorOptions options) { return full({}, value, options); }

template <typename T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape) {
  const std::int64_t count = checked_numel(shape, "from_vector");
  NG_CHECK(static_cast<std::int64_t>(values.size()) == count, "from_vector", "got ", values.size(),
           " values for shape ", shape, " (", count, " elements)");
  Tensor out = detail::make_tensor(shape, dtype_of_v<T>, Device::cpu(), "from_vector");
  if (!values.empty()) std::memcpy(out.storage()->data(), values.data(), values.size() * sizeof(T));
  return out;
}
template Tensor from_vector<float>(const std::vector<float>&, const Shape&);
template Tensor from_vector<double>(const std::vector<double>&, const Shape&);
template Tensor from_vector<std::int64_t>(const std::vector<std::int64_t>&, const Shape&);
template Tensor from_vector<bfloat16>(const std::vector<bfloat16>&, const Shape&);

namespace {
Tensor from_doubles(const std::vector<double>& values, const Shape& shape,
                    const TensorOptions& options) {
  Tensor host = from_vector(values, shape);
  Tensor out = detail::make_tensor(shape, options.dtype, Device::cpu());
  detail::copy_values(out, host);
  if (!options.device.is_cpu()) out = out.to(options.device);
  return finish(out, options);
}
}  // namespace

Tensor tensor(std::initializer_list<double> values, TensorOptions options) {
  return from_doubles(std::vector<double>(values), {static_cast<std::int64_t>(values.size())},
                      options);
}

Tensor tensor(std::initializer_list<std::initializer_list<double>> rows, TensorOptions options) {
  const std::size_t width = rows.size() ? rows.begin()->size() : 0;
  std::vector<double> values;
  for (const auto& row : rows) {
    NG_CHECK(row.size() == width, "tensor", "rows must have equal lengths, got ", width, " and ",
             row.size());
    values.insert(values.end(), row.begin(), row.end());
  }
  return from_doubles(values,
                      {static_cast<std::int64_t>(rows.size()), static_cast<std::int64_t>(width)},
                      options);
}

Tensor rand(const Shape& shape, Generator& generator, TensorOptions options) {
  NG_CHECK(is_floating(options.dtype), "rand", "needs a floating dtype, got ", options.dtype);
  return random_tensor(shape, generator, options, backend::RandomKind::Uniform, 0, 1, "rand");
}

Tensor randn(const Shape& shape, Generator& generator, TensorOptions options) {
  NG_CHECK(is_floating(options.dtype), "randn", "needs a floating dtype, got ", options.dtype);
  return random_tensor(shape, generator, options, backend::RandomKind::Normal, 0, 1, "randn");
}

Tensor randint(std::int64_t low, std::int64_t high, const Shape& shape, Generator& generator,
               TensorOptions options) {
  NG_CHECK(low < high, "randint", "needs low < high, got [", low, ", ", high, ")");
  return random_tensor(shape, generator, options, backend::RandomKind::Integer,
                       static_cast<double>(low), static_cast<double>(high), "randint");
}

Tensor rand(const Shape& shape, TensorOptions options) {
  return rand(shape, default_generator(), options);
}
Tensor randn(const Shape& shape, TensorOptions options) {
  return randn(shape, default_generator(), options);
}
Tensor randint(std::int64_t low, std::int64_t high, const Shape& shape, TensorOptions options) {
  return randint(low, high, shape, default_generator(), options);
}

Generator& default_generator() {
  static Generator generator(0);
  return generator;
}

void manual_seed(std::uint64_t seed) { default_generator().manual_seed(seed); }

}  // namespace normgrad
