// The CUDA backend's elementwise, reduction and softmax kernels take bfloat16 natively: each
// widens the values it loads to float32, computes as its float32 instantiation does, and rounds
// once as it stores. So on the same device each must give, bit for bit, the float32 kernel's
// result on the same values laid out alike, rounded once; and it must do so without float32
// copies of its operands, which the peak of the device's memory shows.

#include <functional>
#include <string>
#include <vector>

#include "backends/dispatch.h"
#include "backends/op_names.h"
#include "core/tensor_internal.h"
#include "cuda_parity.h"
#include "helpers.h"
#include "normgrad.h"

using namespace normgrad;
using backend::BinaryOp;
using backend::UnaryOp;
using testing::bits_mismatch;
using testing::parity_device;

namespace {

Tensor to_bfloat16(const Tensor& t) { return t.to(DType::BFloat16); }
Tensor to_float32(const Tensor& t) { return t.to(DType::Float32); }

// The same view of a bfloat16 tensor and of its float32 twin (equal values, equal strides), so
// that the two kernels walk their operands alike and sum them in the same order.
struct Operand {
  Tensor stored;   // bfloat16
  Tensor widened;  // float32
};
using View = std::function<Tensor(const Tensor&)>;

Operand view_of(const Tensor& bfloat16_base, const View& view) {
  return {view(bfloat16_base), view(to_float32(bfloat16_base))};
}

// The layouts the elementwise kernels tell apart, each of shape [rows, cols]: contiguous
// (4-element vectors, then a tail), a transposed view (the strided kernel), every other column
// of a wider tensor (one strided dim), and a row broadcast down the rows (stride 0).
struct Layout {
  const char* name;
  View view;  // from a base of shape [rows, 2 * cols]
};

std::vector<Layout> layouts(std::int64_t rows, std::int64_t cols) {
  return {
      {"contiguous", [=](const Tensor& t) { return t.narrow(1, 0, cols).contiguous(); }},
      {"transposed", [=](const Tensor& t) { return t.narrow(1, 0, cols).t().contiguous().t(); }},
      {"every other column", [=](const Tensor& t) { return t.slice(1, 0, 2 * cols, 2); }},
      {"broadcast row",
       [=](const Tensor& t) {
         return t.narrow(0, 0, 1).narrow(1, 0, cols).expand({rows, cols});
       }},
  };
}

backend::Backend& backend_of(const Tensor& t) { return backend::backend_for(t.device()); }

Tensor empty_like_dtype(const Tensor& t, DType dtype) {
  return empty(t.shape(), {.dtype = dtype, .device = t.device()});
}

Tensor unary(UnaryOp op, const Tensor& in, double alpha, double beta) {
  Tensor out = empty_like_dtype(in, in.dtype());
  backend_of(in).unary(op, detail::ref(out), detail::ref(in), alpha, beta);
  return out;
}

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, double alpha, DType out_dtype) {
  Tensor out = empty_like_dtype(a, out_dtype);
  backend_of(a).binary(op, detail::ref(out), detail::ref(a), detail::ref(b), alpha);
  return out;
}

Tensor softmax_backward(const Tensor& dy, const Tensor& y, int dim, bool log) {
  Tensor dx = empty_like_dtype(dy, dy.dtype());
  backend_of(dy).softmax_backward(detail::ref(dx), detail::ref(dy), detail::ref(y), dim, log);
  return dx;
}

// Ops whose float32 result depends on the domain get positive inputs, so that the values
// compared are numbers rather than NaNs.
bool wants_positive(UnaryOp op) {
  return op == UnaryOp::Log || op == UnaryOp::Sqrt || op == UnaryOp::Rsqrt ||
         op == UnaryOp::PowScalar;
}

}  // namespace

TEST_CASE("cuda: bfloat16 unary ops are the float32 kernels on the same values, rounded once") {
  SKIP_PARITY_WITHOUT_CUDA();
  Generator generator(41);
  const std::int64_t rows = 37, cols = 130;
  const Tensor signed_base = to_bfloat16(randn({rows, 2 * cols}, generator) * 3.0);
  const Tensor positive_base = to_bfloat16(rand({rows, 2 * cols}, generator) * 4.0 + 0.05);
  struct Case {
    UnaryOp op;
    double alpha = 0, beta = 0;
  };
  const std::vector<Case> cases = {
      {UnaryOp::Neg},
      {UnaryOp::Abs},
      {UnaryOp::Exp},
      {UnaryOp::Log},
      {UnaryOp::Sqrt},
      {UnaryOp::Rsqrt},
      {UnaryOp::Tanh},
      {UnaryOp::Sigmoid},
      {UnaryOp::Relu},
      {UnaryOp::Gelu},
      {UnaryOp::Sign},
      {UnaryOp::Square},
      {UnaryOp::LeakyRelu, 0.01},
      {UnaryOp::Clamp, -1.5, 2.0},
      {UnaryOp::PowScalar, 1.7},
      {UnaryOp::PowScalar, 2.0},
      {UnaryOp::AddScalar, 0.3},
      {UnaryOp::MulScalar, -1.1},
      {UnaryOp::RsubScalar, 2.5},
      {UnaryOp::RdivScalar, 0.7},
  };
  for (const Layout& layout : layouts(rows, cols)) {
    for (const Case& c : cases) {
      CAPTURE(layout.name);
      CAPTURE(backend::unary_name(c.op));
      const Tensor& base = wants_positive(c.op) ? positive_base : signed_base;
      const Operand in = view_of(base.to(parity_device()), layout.view);
      const Tensor native = unary(c.op, in.stored, c.alpha, c.beta);
      const Tensor reference = to_bfloat16(unary(c.op, in.widened, c.alpha, c.beta));
      CHECK_NO_MISMATCH(bits_mismatch(native, reference));
    }
  }
}

TEST_CASE("cuda: bfloat16 binary ops, comparisons and where are the float32 kernels, rounded") {
  SKIP_PARITY_WITHOUT_CUDA();
  Generator generator(42);
  const std::int64_t rows = 29, cols = 66;
  // b draws from a few values, so that comparisons meet ties, and stays away from 0 for Div.
  const Tensor a_base = to_bfloat16(randn({rows, 2 * cols}, generator) * 2.0);
  const Tensor b_base =
      to_bfloat16(randint(1, 5, {rows, 2 * cols}, generator).to(DType::Float32) * 0.5 - 1.25);
  const Tensor ties_base =
      to_bfloat16(randint(1, 5, {rows, 2 * cols}, generator).to(DType::Float32) * 0.5 - 1.25);
  const Tensor positive_base = to_bfloat16(rand({rows, 2 * cols}, generator) + 0.5);
  const std::vector<BinaryOp> arithmetic = {
      BinaryOp::Add,         BinaryOp::Sub,      BinaryOp::Mul,      BinaryOp::Div,
      BinaryOp::Pow,         BinaryOp::Maximum,  BinaryOp::Minimum,  BinaryOp::TanhGrad,
      BinaryOp::SigmoidGrad, BinaryOp::ReluGrad, BinaryOp::GeluGrad, BinaryOp::LeakyReluGrad};
  const std::vector<BinaryOp> comparisons = {BinaryOp::Eq, BinaryOp::Ne, BinaryOp::Lt,
                                             BinaryOp::Le, BinaryOp::Gt, BinaryOp::Ge};
  const auto contiguous = layouts(rows, cols).front();
  for (const Layout& layout : layouts(rows, cols)) {
    CAPTURE(layout.name);
    // a in each layout against a contiguous b: broadcast and strided operands meet plain ones.
    const Operand b = view_of(b_base.to(parity_device()), contiguous.view);
    for (const BinaryOp op : arithmetic) {
      CAPTURE(backend::binary_name(op));
      const Tensor& a_source = op == BinaryOp::Pow ? positive_base : a_base;
      const Operand a = view_of(a_source.to(parity_device()), layout.view);
      const double alpha = op == BinaryOp::LeakyReluGrad ? 0.02 : 0.0;
      const Tensor native = binary(op, a.stored, b.stored, alpha, DType::BFloat16);
      const Tensor reference = to_bfloat16(binary(op, a.widened, b.widened, alpha, DType::Float32));
      CHECK_NO_MISMATCH(bits_mismatch(native, reference));
    }
    const Operand a = view_of(a_base.to(parity_device()), layout.view);
    const Operand ties = view_of(ties_base.to(parity_device()), layout.view);
    for (const BinaryOp op : comparisons) {
      CAPTURE(backend::binary_name(op));
      for (const DType out : {DType::BFloat16, DType::Float32}) {
        CAPTURE(out);
        const Tensor native = binary(op, ties.stored, b.stored, 0.0, out);
        const Tensor reference = binary(op, ties.widened, b.widened, 0.0, out);
        CHECK_NO_MISMATCH(bits_mismatch(native, reference));
        // Ties and differences both occur, so every comparison answers both ways.
        const double trues = to_float32(native).sum().item();
        CHECK(trues > 0);
        CHECK(trues < static_cast<double>(native.numel()));
      }
    }
    // where with a bfloat16 condition (zeros among its values) and bfloat16 values: the chosen
    // values are moved, bit for bit.
    const Operand cond =
        view_of(to_bfloat16(to_float32(b_base) + 0.25).to(parity_device()), layout.view);
    const Tensor chosen = where(cond.stored, a.stored, b.stored);
    const Tensor reference = to_bfloat16(where(cond.widened, a.widened, b.widened));
    CHECK_NO_MISMATCH(bits_mismatch(chosen, reference));
  }
}

TEST_CASE("cuda: bfloat16 sums, extremes and their indices are the float32 reductions, rounded") {
  SKIP_PARITY_WITHOUT_CUDA();
  Generator generator(43);
  // Shapes that take each plan: short rows (a thread per output), rows up to 2048 (a warp),
  // long rows split into chunks (a block, then the partials' pass), and sums down the columns
  // of a row-major matrix (the column plan).
  const std::vector<Shape> shapes = {{300, 12}, {64, 700}, {6, 70000}, {2, 3, 5000}};
  for (const Shape& shape : shapes) {
    CAPTURE(shape);
    const Tensor base = to_bfloat16(randn(shape, generator)).to(parity_device());
    for (const bool transposed : {false, true}) {
      CAPTURE(transposed);
      const View view = [&](const Tensor& t) { return transposed ? t.transpose(0, 1) : t; };
      const Operand x = view_of(base, view);
      const std::int64_t rank = static_cast<std::int64_t>(x.stored.shape().size());
      for (std::int64_t dim = 0; dim < rank; ++dim) {
        CAPTURE(dim);
        CHECK_NO_MISMATCH(bits_mismatch(x.stored.sum({dim}), to_bfloat16(x.widened.sum({dim}))));
        CHECK_NO_MISMATCH(bits_mismatch(x.stored.mean({dim}), to_bfloat16(x.widened.mean({dim}))));
        CHECK_NO_MISMATCH(bits_mismatch(max(x.stored, dim), to_bfloat16(max(x.widened, dim))));
        CHECK_NO_MISMATCH(bits_mismatch(min(x.stored, dim), to_bfloat16(min(x.widened, dim))));
        CHECK_NO_MISMATCH(bits_mismatch(argmax(x.stored, dim), argmax(x.widened, dim)));
        CHECK_NO_MISMATCH(bits_mismatch(argmin(x.stored, dim), argmin(x.widened, dim)));
      }
      CHECK_NO_MISMATCH(bits_mismatch(x.stored.sum(), to_bfloat16(x.widened.sum())));
    }
  }
}

TEST_CASE("cuda: bfloat16 softmax and log-softmax, forward and backward, are the float32 ones") {
  SKIP_PARITY_WITHOUT_CUDA();
  Generator generator(44);
  struct Case {
    Shape shape;
    int dim;
  };
  // The warp kernels (contiguous lines up to 1024), the block kernels (longer lines), and lines
  // across memory: a warp per line for few, a thread per line for many adjacent ones.
  const std::vector<Case> cases = {
      {{50, 37}, 1}, {{9, 1000}, 1}, {{6, 3000}, 1}, {{20, 100}, 0}, {{20, 1100}, 0}};
  for (const Case& c : cases) {
    for (const bool log : {false, true}) {
      CAPTURE(c.shape);
      CAPTURE(c.dim);
      CAPTURE(log);
      const Operand x = view_of(to_bfloat16(randn(c.shape, generator) * 2.0).to(parity_device()),
                                [](const Tensor& t) { return t; });
      const Tensor y = log ? log_softmax(x.stored, c.dim) : softmax(x.stored, c.dim);
      const Tensor y_wide = log ? log_softmax(x.widened, c.dim) : softmax(x.widened, c.dim);
      CHECK_NO_MISMATCH(bits_mismatch(y, to_bfloat16(y_wide)));
      // Backward from the rounded forward output, as a bfloat16 graph runs it.
      const Tensor dy = to_bfloat16(randn(c.shape, generator)).to(parity_device());
      const Tensor dx = softmax_backward(dy, y, c.dim, log);
      const Tensor dx_wide = softmax_backward(to_float32(dy), to_float32(y), c.dim, log);
      CHECK_NO_MISMATCH(bits_mismatch(dx, to_bfloat16(dx_wide)));
    }
  }
}

TEST_CASE("cuda: bfloat16 elementwise ops, sums and softmax make no float32 copies") {
  SKIP_WITHOUT_CUDA();  // the CPU still works on float32 copies
  Generator generator(45);
  const Device gpu = Device::cuda();
  const std::int64_t n = 1024;
  const Tensor x = to_bfloat16(randn({n, n}, generator)).to(gpu);  // 2 MiB; 4 MiB as float32
  const Tensor y = to_bfloat16(randn({n, n}, generator)).to(gpu);
  Tensor out = empty({n, n}, {.dtype = DType::BFloat16, .device = gpu});
  Tensor row_sums = empty({n, 1}, {.dtype = DType::BFloat16, .device = gpu});
  backend::Backend& backend = backend::backend_for(gpu);
  reset_peak_memory_stats(gpu);
  const std::size_t allocated = memory_stats(gpu).allocated_bytes;
  backend.unary(UnaryOp::Tanh, detail::ref(out), detail::ref(x), 0, 0);
  backend.binary(BinaryOp::Mul, detail::ref(out), detail::ref(x), detail::ref(y), 0);
  backend.where(detail::ref(out), detail::ref(x), detail::ref(x), detail::ref(y));
  backend.reduce(backend::ReduceOp::Sum, detail::ref(row_sums), detail::ref(x), 0, 1.0);
  backend.softmax(detail::ref(out), detail::ref(x), 1, false);
  backend.softmax_backward(detail::ref(out), detail::ref(y), detail::ref(x), 1, false);
  cuda::synchronize();
  const MemoryStats stats = memory_stats(gpu);
  CHECK(stats.allocated_bytes == allocated);
  // The sum's partial results (16 KiB) are the only scratch; a float32 copy of x is 4 MiB.
  CHECK(stats.peak_allocated_bytes <= allocated + (64u << 10));
}
