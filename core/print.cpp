// Printing: values laid out by dimension, as PyTorch does, then shape, dtype and device.
// Large tensors show their first and last three entries per dimension around "...".

#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/tensor.h"

namespace normgrad {

namespace {

constexpr std::int64_t kSummariseAbove = 1000;
constexpr std::int64_t kEdgeItems = 3;

std::string format_value(double value, DType dtype) {
  char buffer[64];
  if (dtype == DType::Int64)
    std::snprintf(buffer, sizeof buffer, "%lld", static_cast<long long>(value));
  else if (value != 0 && (std::fabs(value) >= 1e6 || std::fabs(value) < 1e-4))
    std::snprintf(buffer, sizeof buffer, "%.4e", value);
  else
    std::snprintf(buffer, sizeof buffer, "%.4f", value);
  return buffer;
}

struct Printer {
  const std::vector<double>& values;
  const Shape& shape;
  DType dtype;
  bool summarise;
  std::size_t width = 0;  // widest formatted value, for alignment
  std::ostringstream out;

  bool shown(std::int64_t index, std::int64_t size) const {
    return !summarise || size <= 2 * kEdgeItems || index < kEdgeItems ||
           index >= size - kEdgeItems;
  }

  void measure(std::size_t dim, std::int64_t base) {
    const std::int64_t size = shape[dim];
    for (std::int64_t i = 0; i < size; ++i) {
      if (!shown(i, size)) continue;
      if (dim + 1 == shape.size())
        width = std::max(width, format_value(values[base + i], dtype).size());
      else
        measure(dim + 1, (base + i) * shape[dim + 1]);
    }
  }

  void print(std::size_t dim, std::int64_t base, int indent) {
    const std::int64_t size = shape[dim];
    out << '[';
    bool skipped = false;
    for (std::int64_t i = 0; i < size; ++i) {
      if (!shown(i, size)) {
        if (!skipped) out << (dim + 1 == shape.size() ? "..., " : "...,\n" + std::string(indent + 1, ' '));
        skipped = true;
        continue;
      }
      if (dim + 1 == shape.size()) {
        std::string text = format_value(values[base + i], dtype);
        out << std::string(width - text.size(), ' ') << text;
        if (i + 1 < size) out << ", ";
      } else {
        print(dim + 1, (base + i) * shape[dim + 1], indent + 1);
        if (i + 1 < size)
          out << ',' << std::string(shape.size() - dim - 1, '\n') << std::string(indent + 1, ' ');
      }
    }
    out << ']';
  }
};

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "tensor(undefined)";
  std::vector<double> values = to_vector<double>();
  Printer printer{values, shape(), dtype(), numel() > kSummariseAbove, 0, {}};
  printer.out << "tensor(";
  if (dim() == 0) {
    printer.out << format_value(values[0], dtype());
  } else if (numel() == 0) {
    printer.out << "[]";
  } else {
    printer.measure(0, 0);
    printer.print(0, 0, 7);
  }
  printer.out << ", shape=" << to_string(shape()) << ", dtype=" << dtype()
              << ", device=" << device();
  if (requires_grad()) printer.out << ", requires_grad";
  printer.out << ')';
  return printer.out.str();
}

std::ostream& operator<<(std::ostream& out, const Tensor& tensor) { return out << tensor.str(); }

}  // namespace normgrad
