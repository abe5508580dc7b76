// Each backend's kernels take bfloat16 and give, bit for bit, the float32 kernel's result on
// the same values, rounded once (elementwise ops, reductions, softmax, the accumulating indexing
// ops); a product of bfloat16 operands may keep its float32 sums. Every case runs on the CPU,
// and again on a GPU where there is one. The op families' kernels (norms, batch norm,
// convolution, pooling, the recurrent steps) are checked alike in the bfloat16 sections of their
// test_<family>.cpp.
//
// The CPU computes bfloat16 through float32 working copies of its operands
// (backends/bfloat16_widening.h), laid out contiguously but for their broadcast dims, so there
// the reference is the float32 kernel on the values laid out as the copy lays them out
// (laid_out_as_copied). CUDA's kernels are native: they widen each value they load to float32,
// compute as their float32 instantiation does on the same view, and round once as they store;
// one case checks, by the peak of the GPU's memory, that they make no float32 copies.

#include <functional>
#include <string>
#include <vector>

#include "backends/dispatch.h"
#include "backends/op_names.h"
#include "bfloat16_twins.h"
#include "core/tensor_internal.h"
#include "cuda_parity.h"
#include "helpers.h"
#include "normgrad.h"

using namespace normgrad;
using backend::BinaryOp;
using backend::UnaryOp;
using testing::bits_mismatch;
using namespace testing::twins;

namespace {

// A bfloat16 view and its float32 twin, laid out as the kernel under test sees the values, so
// that the float32 kernel walks them alike and sums them in the same order.
struct Operand {
  Tensor stored;   // bfloat16
  Tensor widened;  // float32
};
using View = std::function<Tensor(const Tensor&)>;

// The values of a bfloat16 view in float32, laid out as the CPU's working copy lays them out
// (backends/bfloat16_widening.h): broadcast dims (stride 0) kept broadcast, every other dim
// contiguous. On a strided view the float32 kernel may take other code than on this layout
// (exp's scalar function rather than its vectorised row, another order of summation), so this
// layout, not the view's, is what the CPU's bfloat16 result is the float32 kernel's on.
Tensor laid_out_as_copied(const Tensor& stored) {
  Tensor distinct = stored;
  for (std::size_t d = 0; d < stored.shape().size(); ++d)
    if (stored.strides()[d] == 0) distinct = distinct.narrow(static_cast<std::int64_t>(d), 0, 1);
  return to_float32(distinct).contiguous().expand(stored.shape());
}

// CUDA's native kernels walk the view itself; the CPU computes on its working copy.
Operand view_of(const Tensor& bfloat16_base, const View& view) {
  const Tensor stored = view(bfloat16_base);
  if (stored.device().is_cuda()) return {stored, view(to_float32(bfloat16_base))};
  return {stored, laid_out_as_copied(stored)};
}

// The layouts the elementwise kernels tell apart, each of shape [rows, cols]: contiguous
// (4-element vectors, then a tail), a transposed view (the strided kernel), every other column
// of a wider tensor (one strided dim), a row broadcast down the rows and a column broadcast
// along them (stride 0 outside, and inside, the rows).
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
      {"broadcast column",
       [=](const Tensor& t) {
         return t.narrow(1, 0, 1).expand({rows, cols});
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

TEST_CASE(
    "bfloat16 kernels: unary ops are the float32 kernels on the same values, rounded "
    "once") {
  for (const Device device : devices_present()) {
    CAPTURE(device);
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
        const Operand in = view_of(base.to(device), layout.view);
        const Tensor native = unary(c.op, in.stored, c.alpha, c.beta);
        const Tensor reference = to_bfloat16(unary(c.op, in.widened, c.alpha, c.beta));
        CHECK_NO_MISMATCH(bits_mismatch(native, reference));
      }
    }
  }
}

TEST_CASE(
    "bfloat16 kernels: binary ops, comparisons and where are the float32 kernels, "
    "rounded") {
  for (const Device device : devices_present()) {
    CAPTURE(device);
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
      const Operand b = view_of(b_base.to(device), contiguous.view);
      for (const BinaryOp op : arithmetic) {
        CAPTURE(backend::binary_name(op));
        const Tensor& a_source = op == BinaryOp::Pow ? positive_base : a_base;
        const Operand a = view_of(a_source.to(device), layout.view);
        const double alpha = op == BinaryOp::LeakyReluGrad ? 0.02 : 0.0;
        const Tensor native = binary(op, a.stored, b.stored, alpha, DType::BFloat16);
        const Tensor reference =
            to_bfloat16(binary(op, a.widened, b.widened, alpha, DType::Float32));
        CHECK_NO_MISMATCH(bits_mismatch(native, reference));
      }
      const Operand a = view_of(a_base.to(device), layout.view);
      const Operand ties = view_of(ties_base.to(device), layout.view);
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
      const Operand cond = view_of(to_bfloat16(to_float32(b_base) + 0.25).to(device), layout.view);
      const Tensor chosen = where(cond.stored, a.stored, b.stored);
      const Tensor reference = to_bfloat16(where(cond.widened, a.widened, b.widened));
      CHECK_NO_MISMATCH(bits_mismatch(chosen, reference));
    }
  }
}

TEST_CASE("bfloat16 kernels: elementwise ops in place read each value before they write it") {
  // out is an operand itself, as in x.add_(y) or x.exp_(): the same results as out of place.
  for (const Device device : devices_present()) {
    CAPTURE(device);
    Generator generator(47);
    const Tensor a = to_bfloat16(randn({33, 70}, generator)).to(device);
    const Tensor b = to_bfloat16(randn({33, 70}, generator)).to(device);
    Tensor sum = a.clone(), product = a.clone(), exps = a.clone();
    backend_of(a).binary(BinaryOp::Add, detail::ref(sum), detail::ref(sum), detail::ref(b), 0);
    backend_of(a).binary(BinaryOp::Mul, detail::ref(product), detail::ref(b), detail::ref(product),
                         0);
    backend_of(a).unary(UnaryOp::Exp, detail::ref(exps), detail::ref(exps), 0, 0);
    CHECK_NO_MISMATCH(bits_mismatch(sum, binary(BinaryOp::Add, a, b, 0, DType::BFloat16), "a + b"));
    CHECK_NO_MISMATCH(
        bits_mismatch(product, binary(BinaryOp::Mul, b, a, 0, DType::BFloat16), "b a"));
    CHECK_NO_MISMATCH(bits_mismatch(exps, unary(UnaryOp::Exp, a, 0, 0), "exp(a)"));
  }
}

TEST_CASE(
    "bfloat16 kernels: sums, extremes and their indices are the float32 reductions, "
    "rounded") {
  for (const Device device : devices_present()) {
    CAPTURE(device);
    Generator generator(43);
    // Shapes that take each plan: short rows (a thread per output), rows up to 2048 (a warp),
    // long rows split into chunks (a block, then the partials' pass), and sums down the columns
    // of a row-major matrix (the column plan).
    const std::vector<Shape> shapes = {{300, 12}, {64, 700}, {6, 70000}, {2, 3, 5000}};
    for (const Shape& shape : shapes) {
      CAPTURE(shape);
      const Tensor base = to_bfloat16(randn(shape, generator)).to(device);
      for (const bool transposed : {false, true}) {
        CAPTURE(transposed);
        const View view = [&](const Tensor& t) { return transposed ? t.transpose(0, 1) : t; };
        const Operand x = view_of(base, view);
        const std::int64_t rank = static_cast<std::int64_t>(x.stored.shape().size());
        for (std::int64_t dim = 0; dim < rank; ++dim) {
          CAPTURE(dim);
          CHECK_NO_MISMATCH(bits_mismatch(x.stored.sum({dim}), to_bfloat16(x.widened.sum({dim}))));
          CHECK_NO_MISMATCH(
              bits_mismatch(x.stored.mean({dim}), to_bfloat16(x.widened.mean({dim}))));
          CHECK_NO_MISMATCH(bits_mismatch(max(x.stored, dim), to_bfloat16(max(x.widened, dim))));
          CHECK_NO_MISMATCH(bits_mismatch(min(x.stored, dim), to_bfloat16(min(x.widened, dim))));
          CHECK_NO_MISMATCH(bits_mismatch(argmax(x.stored, dim), argmax(x.widened, dim)));
          CHECK_NO_MISMATCH(bits_mismatch(argmin(x.stored, dim), argmin(x.widened, dim)));
        }
        CHECK_NO_MISMATCH(bits_mismatch(x.stored.sum(), to_bfloat16(x.widened.sum())));
      }
    }
  }
}

TEST_CASE(
    "bfloat16 kernels: softmax and log-softmax, forward and backward, are the float32 "
    "ones") {
  for (const Device device : devices_present()) {
    CAPTURE(device);
    Generator generator(44);
    struct Case {
      Shape shape;
      int dim;
      bool every_other = false;  // x and dy are every other column of wider tensors
    };
    // The warp kernels (contiguous lines up to 1024), the block kernels (longer lines), and lines
    // across memory: a warp per line for few, a thread per line for many adjacent ones. On the
    // CPU: strided lines (every other column), which take other code than contiguous ones, and
    // columns too many to widen at once (600 x 300 over dim 0), split over threads.
    const std::vector<Case> cases = {
        {{50, 37}, 1},        {{9, 1000}, 1},       {{6, 3000}, 1},
        {{20, 100}, 0},       {{20, 1100}, 0},      {{50, 37}, 1, true},
        {{9, 1000}, 1, true}, {{20, 100}, 0, true}, {{600, 300}, 0}};
    for (const Case& c : cases) {
      for (const bool log : {false, true}) {
        CAPTURE(c.shape);
        CAPTURE(c.dim);
        CAPTURE(c.every_other);
        CAPTURE(log);
        const auto draw = [&](double scale) {
          const Shape wide = {c.shape[0], (c.every_other ? 2 : 1) * c.shape[1]};
          return to_bfloat16(randn(wide, generator) * scale).to(device);
        };
        const View view = [&c](const Tensor& t) {
          return c.every_other ? t.slice(1, 0, t.size(1), 2) : t;
        };
        const Operand x = view_of(draw(2.0), view);
        const Tensor y = log ? log_softmax(x.stored, c.dim) : softmax(x.stored, c.dim);
        const Tensor y_wide = log ? log_softmax(x.widened, c.dim) : softmax(x.widened, c.dim);
        CHECK_NO_MISMATCH(bits_mismatch(y, to_bfloat16(y_wide)));
        // Backward from the rounded forward output, as a bfloat16 graph runs it.
        const Operand dy = view_of(draw(1.0), view);
        const Tensor dx = softmax_backward(dy.stored, y, c.dim, log);
        const Tensor dx_wide = softmax_backward(dy.widened, to_float32(y), c.dim, log);
        CHECK_NO_MISMATCH(bits_mismatch(dx, to_bfloat16(dx_wide)));
      }
    }
  }
}

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


// The convolution by columns keeps cuBLAS's float32 sums of bfloat16 columns: a product of
// bfloat16 operands into a float32 out, plain and accumulating. cuBLAS adds on the tensor cores
// in its own order, so against the float32 product of the same values the bound is the sums'
// (cuda_parity.h), and the values must not have been rounded to bfloat16 on the way.
TEST_CASE("bfloat16 kernels: a product of bfloat16 operands into float32 keeps the float32 sums") {
  for (const Device device : devices_present()) {
    CAPTURE(device);
    Generator generator(48);
    backend::Backend& kernels = backend::backend_for(device);
    const std::int64_t m = 33, k = 300, n = 70;
    const Twin a = input_twin(device, {m, k}, generator), b = input_twin(device, {k, n}, generator);
    const Tensor start = randn({m, n}, generator).to(device);
    for (const bool accumulate : {false, true}) {
      CAPTURE(accumulate);
      Tensor sums[2] = {start.clone(), start.clone()};  // from bfloat16 and from float32 operands
      for (const bool narrow : {true, false})
        kernels.matmul(detail::ref(sums[narrow ? 0 : 1]), a.ref(narrow), b.ref(narrow), accumulate);
      CHECK(sums[0].dtype() == DType::Float32);
      const testing::Tolerance bound = testing::summed(DType::Float32, double(k), 16.0);
      CHECK_NO_MISMATCH(testing::mismatch(sums[1], sums[0], bound));
      // float32 values that bfloat16 cannot hold: the sums were not rounded.
      CHECK((sums[0] - to_float32(to_bfloat16(sums[0]))).abs().max().item() > 0);
    }
  }
}

// The accumulating indexing ops add each target's sources in order in float32 and round once:
// the float32 kernels' sums (which may walk the columns instead of sorting) rounded.
TEST_CASE("bfloat16 kernels: index_add and scatter_add are the float32 kernels, rounded once") {
  for (const Device device : devices_present()) {
    CAPTURE(device);
    Generator generator(52);
    backend::Backend& kernels = backend::backend_for(device);
    // Few targets, so each is hit many times: long runs of repeated indices.
    const Tensor rows = randint(0, 7, {300}, generator).to(device);
    const Twin src = input_twin(device, {5, 300, 9}, generator);
    Twin sums = input_twin(device, {5, 7, 9}, generator);  // added to, so it starts with values
    for (const bool narrow : {true, false})
      kernels.index_add(sums.ref(narrow), 1, detail::ref(rows), src.ref(narrow));
    CHECK_NO_MISMATCH(twin_mismatch(sums, "index_add"));
    // Short columns (walked in place by float32) and long ones (sorted by both).
    for (const std::int64_t length : {40, 400}) {
      CAPTURE(length);
      const Tensor index = randint(0, 6, {8, length}, generator).to(device);
      const Twin values = input_twin(device, {8, length}, generator);
      Twin out = input_twin(device, {8, 6}, generator);
      for (const bool narrow : {true, false})
        kernels.scatter_add(out.ref(narrow), 1, detail::ref(index), values.ref(narrow));
      CHECK_NO_MISMATCH(twin_mismatch(out, "scatter_add"));
    }
  }
}
