#include "nn/positional_encoding.h"

#include <cmath>
#include <vector>

#include "autograd/ops.h"
#include "base/error.h"
#include "profiler/recorder.h"

namespace normgrad::nn {

namespace functional {

Tensor sinusoidal_positional_encoding(std::int64_t length, std::int64_t d_model, DType dtype,
                                      std::int64_t offset) {
  NG_CHECK(length >= 0 && d_model > 0 && offset >= 0, "sinusoidal_positional_encoding",
           "expects length >= 0, d_model > 0 and offset >= 0, got ", length, ", ", d_model, " and ",
           offset);
  NG_CHECK(is_floating(dtype), "sinusoidal_positional_encoding",
           "expects a floating-point dtype, got ", dtype);
  // Computed in double and converted, so float32 and float64 tables agree to rounding.
  std::vector<double> values(static_cast<std::size_t>(length * d_model));
  for (std::int64_t pos = 0; pos < length; ++pos)
    for (std::int64_t column = 0; column < d_model; ++column) {
      const std::int64_t pair = column / 2;  // i: columns 2i and 2i + 1 share a frequency
      const double angle =
          static_cast<double>(pos + offset) /
          std::pow(10000.0, static_cast<double>(2 * pair) / static_cast<double>(d_model));
      values[static_cast<std::size_t>(pos * d_model + column)] =
          column % 2 == 0 ? std::sin(angle) : std::cos(angle);
    }
  return from_vector(values, {length, d_model}).to(dtype);
}

}  // namespace functional

SinusoidalPositionalEncoding::SinusoidalPositionalEncoding(std::int64_t d_model,
                                                           std::int64_t max_length, DType dtype) {
  NG_CHECK(d_model > 0 && max_length > 0, "SinusoidalPositionalEncoding",
           "d_model and max_length must be positive, got ", d_model, " and ", max_length);
  table_ = functional::sinusoidal_positional_encoding(max_length, d_model, dtype);
}

Tensor SinusoidalPositionalEncoding::forward(const Tensor& x) { return forward(x, 0); }

Tensor SinusoidalPositionalEncoding::forward(const Tensor& x, std::int64_t offset) {
  const profiler::ModuleSpan span(this, "SinusoidalPositionalEncoding");

  const char* op = "SinusoidalPositionalEncoding";
  NG_CHECK(x.defined(), op, "the input is undefined");
  NG_CHECK((x.dim() == 2 || x.dim() == 3) && x.size(-1) == table_.size(1), op,
           "expects an input of shape [batch, len, ", table_.size(1), "] or [len, ", table_.size(1),
           "], got ", x.shape());
  NG_CHECK(x.dtype() == table_.dtype(), op, "the input is ", x.dtype(), " but the table is ",
           table_.dtype());
  const std::int64_t length = x.size(-2);
  NG_CHECK(offset >= 0 && offset + length <= table_.size(0), op, "positions ", offset, " to ",
           offset + length - 1, " lie beyond the table's ", table_.size(0), " (raise max_length)");
  if (table_.device() != x.device()) table_ = table_.to(x.device());  // moved once, then kept
  return x + table_.narrow(0, offset, length);
}

}  // namespace normgrad::nn
