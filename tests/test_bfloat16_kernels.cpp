// Each backend's kernels take bfloat16 and give, bit for bit, the float32 kernel's result on
// the same values, rounded once (elementwise ops, reductions, softmax, the recurrent steps,
// pooling, batch norm, the implicit-GEMM convolution, the accumulating indexing ops); a product
// of bfloat16 operands may keep its float32 sums. Every case runs on the CPU, and again on a
// GPU where there is one.
//
// The CPU computes bfloat16 through float32 working copies of its operands
// (backends/bfloat16_widening.h), laid out contiguously but for their broadcast dims, so there
// the reference is the float32 kernel on the values laid out as the copy lays them out
// (laid_out_as_copied). CUDA's kernels are native: they widen each value they load to float32,
// compute as their float32 instantiation does on the same view, and round once as they store;
// the last cases check, by the peak of the GPU's memory, that they make no float32 copies.

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "backends/conv_by_columns.h"
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

namespace {

Tensor to_bfloat16(const Tensor& t) { return t.to(DType::BFloat16); }
Tensor to_float32(const Tensor& t) { return t.to(DType::Float32); }

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

// The devices every case runs on: the CPU, and a GPU where there is one.
std::vector<Device> devices_present() {
  std::vector<Device> devices = {Device::cpu()};
  if (cuda::is_available()) devices.push_back(Device::cuda());
  return devices;
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

namespace {

// A bfloat16 tensor and its float32 twin, both on the parity device: inputs hold the same
// values; outputs are written by the bfloat16 kernel and by the float32 one respectively.
struct Twin {
  Tensor stored, widened;
  backend::TensorRef ref(bool narrow) const { return detail::ref(narrow ? stored : widened); }
};

Twin input_twin(Device device, const Shape& shape, Generator& generator, double scale = 1.0) {
  const Tensor values = to_bfloat16(randn(shape, generator) * scale).to(device);
  return {values, to_float32(values)};
}

// An output pair; `statistics` ones are float32 on both sides (a norm's mean and 1 / r).
Twin output_twin(Device device, const Shape& shape, bool statistics = false) {
  const TensorOptions stored{.dtype = statistics ? DType::Float32 : DType::BFloat16,
                             .device = device};
  return {empty(shape, stored), empty(shape, {.device = device})};
}

// The bfloat16 kernel's output against the float32 kernel's, rounded: the same bits.
std::string twin_mismatch(const Twin& out, const std::string& what) {
  const Tensor expected =
      out.stored.dtype() == DType::BFloat16 ? to_bfloat16(out.widened) : out.widened;
  return bits_mismatch(out.stored, expected, what);
}

// A mask of 1s and 0s over `rows` rows, as the kernels read it.
Twin mask_twin(Device device, std::int64_t rows) {
  std::vector<float> values(static_cast<std::size_t>(rows));
  for (std::int64_t row = 0; row < rows; ++row) values[row] = row % 3 == 2 ? 0.0f : 1.0f;
  const Tensor mask = from_vector<float>(values, {rows}).to(device);
  return {to_bfloat16(mask), mask};
}

backend::NormParams layer_norm_params() { return {.centred = true, .eps = 1e-5}; }
// The RMS family over the first k of `width` values (k = width: RMSNorm).
backend::NormParams rms_norm_params(std::int64_t k) {
  return {.centred = false, .k = k, .divisor = static_cast<double>(k), .eps = 1e-8};
}

}  // namespace

TEST_CASE("bfloat16 kernels: GRU and LSTM cell kernels are the float32 ones, rounded once") {
  for (const Device device : devices_present()) {
    CAPTURE(device);
    Generator generator(46);
    backend::Backend& kernels = backend::backend_for(device);
    const std::int64_t B = 7, H = 45;
    const Twin mask = mask_twin(device, B);
    const backend::TensorRef mask_refs[2] = {mask.ref(false), mask.ref(true)};
    {
      INFO("GRU");
      const Twin gx = input_twin(device, {B, 3 * H}, generator),
                 gh = input_twin(device, {B, 3 * H}, generator);
      const Twin h_prev = input_twin(device, {B, H}, generator),
                 dh = input_twin(device, {B, H}, generator);
      const Twin h = output_twin(device, {B, H}), activations = output_twin(device, {B, 3 * H});
      const Twin dgx = output_twin(device, {B, 3 * H}), dgh = output_twin(device, {B, 3 * H});
      const Twin dh_prev = output_twin(device, {B, H});
      for (const bool narrow : {true, false}) {
        kernels.gru_cell_forward(h.ref(narrow), activations.ref(narrow), gx.ref(narrow),
                                 gh.ref(narrow), h_prev.ref(narrow), &mask_refs[narrow]);
      }
      CHECK_NO_MISMATCH(twin_mismatch(h, "h"));
      CHECK_NO_MISMATCH(twin_mismatch(activations, "activations"));
      // Backward reads the activations the bfloat16 forward saved, on both sides.
      const Twin saved{activations.stored, to_float32(activations.stored)};
      for (const bool narrow : {true, false}) {
        kernels.gru_cell_backward(dgx.ref(narrow), dgh.ref(narrow), dh_prev.ref(narrow),
                                  dh.ref(narrow), saved.ref(narrow), gh.ref(narrow),
                                  h_prev.ref(narrow), &mask_refs[narrow]);
      }
      CHECK_NO_MISMATCH(twin_mismatch(dgx, "dgx"));
      CHECK_NO_MISMATCH(twin_mismatch(dgh, "dgh"));
      CHECK_NO_MISMATCH(twin_mismatch(dh_prev, "dh_prev"));
    }
    {
      INFO("LSTM");
      const Twin gates = input_twin(device, {B, 4 * H}, generator),
                 c_prev = input_twin(device, {B, H}, generator);
      const Twin dc = input_twin(device, {B, H}, generator);
      const Twin c = output_twin(device, {B, H}), activations = output_twin(device, {B, 3 * H});
      const Twin dgates = output_twin(device, {B, 4 * H}), dc_prev = output_twin(device, {B, H});
      for (const bool narrow : {true, false}) {
        kernels.lstm_cell_forward(c.ref(narrow), activations.ref(narrow), gates.ref(narrow),
                                  c_prev.ref(narrow), &mask_refs[narrow]);
      }
      CHECK_NO_MISMATCH(twin_mismatch(c, "c"));
      CHECK_NO_MISMATCH(twin_mismatch(activations, "activations"));
      const Twin saved{activations.stored, to_float32(activations.stored)};
      for (const bool narrow : {true, false}) {
        kernels.lstm_cell_backward(dgates.ref(narrow), dc_prev.ref(narrow), dc.ref(narrow),
                                   saved.ref(narrow), c_prev.ref(narrow), &mask_refs[narrow]);
      }
      CHECK_NO_MISMATCH(twin_mismatch(dgates, "dgates"));
      CHECK_NO_MISMATCH(twin_mismatch(dc_prev, "dc_prev"));
    }
  }
}

TEST_CASE("bfloat16 kernels: normed GRU and LSTM steps are the float32 ones, rounded once") {
  for (const Device device : devices_present()) {
    CAPTURE(device);
    Generator generator(47);
    backend::Backend& kernels = backend::backend_for(device);
    // H = 300: a row block of 256 threads, some of which take two units.
    const std::int64_t B = 5, H = 300;
    const Twin mask = mask_twin(device, B);
    const backend::TensorRef mask_refs[2] = {mask.ref(false), mask.ref(true)};
    // A norm's gain and bias over `width` values, as references for each side.
    struct Affine {
      Twin gain, bias;
      backend::TensorRef refs[2][2];  // [narrow][gain, bias]
    };
    const auto affine = [&](std::int64_t width) {
      Affine a{input_twin(device, {width}, generator, 0.3),
               input_twin(device, {width}, generator, 0.1),
               {}};
      a.gain.stored = to_bfloat16(to_float32(a.gain.stored) + 1.0);
      a.gain.widened = to_float32(a.gain.stored);
      for (const bool narrow : {false, true})
        a.refs[narrow][0] = a.gain.ref(narrow), a.refs[narrow][1] = a.bias.ref(narrow);
      return a;
    };
    const auto gradients = [device](std::int64_t width) {
      return std::array<Twin, 2>{output_twin(device, {width}), output_twin(device, {width})};
    };

    {
      INFO("GRU: LayerNorm on the gates, partial RMSNorm on the candidate");
      const Affine gates = affine(2 * H), candidate = affine(H);
      const Twin gx = input_twin(device, {B, 3 * H}, generator),
                 gh = input_twin(device, {B, 3 * H}, generator, 2);
      const Twin h_prev = input_twin(device, {B, H}, generator),
                 dh = input_twin(device, {B, H}, generator);
      const Twin h = output_twin(device, {B, H}), activations = output_twin(device, {B, 3 * H});
      const Twin normalised = output_twin(device, {B, 3 * H}),
                 statistics = output_twin(device, {4, B}, true);
      for (const bool narrow : {true, false}) {
        const backend::GruStateNorms norms{layer_norm_params(),        rms_norm_params(H / 4),
                                           &gates.refs[narrow][0],     &gates.refs[narrow][1],
                                           &candidate.refs[narrow][0], &candidate.refs[narrow][1]};
        kernels.normed_gru_cell_forward(norms, h.ref(narrow), activations.ref(narrow),
                                        normalised.ref(narrow), statistics.ref(narrow),
                                        gx.ref(narrow), gh.ref(narrow), h_prev.ref(narrow),
                                        &mask_refs[narrow]);
      }
      CHECK_NO_MISMATCH(twin_mismatch(h, "h"));
      CHECK_NO_MISMATCH(twin_mismatch(activations, "activations"));
      CHECK_NO_MISMATCH(twin_mismatch(normalised, "normalised"));
      CHECK_NO_MISMATCH(twin_mismatch(statistics, "statistics"));

      const Twin saved_activations{activations.stored, to_float32(activations.stored)};
      const Twin saved_normalised{normalised.stored, to_float32(normalised.stored)};
      const Twin saved_statistics{statistics.stored, statistics.stored};
      const Twin dgx = output_twin(device, {B, 3 * H}), dgh = output_twin(device, {B, 3 * H});
      const Twin dh_prev = output_twin(device, {B, H});
      const auto gate_grads = gradients(2 * H), candidate_grads = gradients(H);
      for (const bool narrow : {true, false}) {
        const backend::GruStateNorms norms{layer_norm_params(),        rms_norm_params(H / 4),
                                           &gates.refs[narrow][0],     &gates.refs[narrow][1],
                                           &candidate.refs[narrow][0], &candidate.refs[narrow][1]};
        const backend::TensorRef grads[4] = {gate_grads[0].ref(narrow), gate_grads[1].ref(narrow),
                                             candidate_grads[0].ref(narrow),
                                             candidate_grads[1].ref(narrow)};
        kernels.normed_gru_cell_backward(
            norms, dgx.ref(narrow), dgh.ref(narrow), dh_prev.ref(narrow),
            {&grads[0], &grads[1], &grads[2], &grads[3]}, dh.ref(narrow),
            saved_activations.ref(narrow), saved_normalised.ref(narrow),
            saved_statistics.ref(narrow), gh.ref(narrow), h_prev.ref(narrow), &mask_refs[narrow]);
      }
      CHECK_NO_MISMATCH(twin_mismatch(dgx, "dgx"));
      CHECK_NO_MISMATCH(twin_mismatch(dgh, "dgh"));
      CHECK_NO_MISMATCH(twin_mismatch(dh_prev, "dh_prev"));
      CHECK_NO_MISMATCH(twin_mismatch(gate_grads[0], "the gates' gain gradient"));
      CHECK_NO_MISMATCH(twin_mismatch(gate_grads[1], "the gates' bias gradient"));
      CHECK_NO_MISMATCH(twin_mismatch(candidate_grads[0], "the candidate's gain gradient"));
      CHECK_NO_MISMATCH(twin_mismatch(candidate_grads[1], "the candidate's bias gradient"));
    }

    for (const bool state_norm : {true, false}) {
      CAPTURE(state_norm);
      // LSTM: RMSNorm on the state side (or none) and LayerNorm on the cell.
      const Affine state = affine(4 * H), cell = affine(H);
      const Twin gx = input_twin(device, {B, 4 * H}, generator),
                 gh = input_twin(device, {B, 4 * H}, generator, 2);
      const Twin h_prev = input_twin(device, {B, H}, generator),
                 c_prev = input_twin(device, {B, H}, generator);
      const Twin outputs = output_twin(device, {B, 2 * H}),
                 activations = output_twin(device, {B, 4 * H});
      const Twin cell_values = output_twin(device, {B, H}),
                 statistics = output_twin(device, {4, B}, true);
      const auto norms_for = [&](bool narrow) {
        backend::LstmStepNorms norms{.normalise_state = state_norm,
                                     .normalise_cell = true,
                                     .state = rms_norm_params(4 * H),
                                     .cell = layer_norm_params()};
        if (state_norm) {
          norms.state_gain = &state.refs[narrow][0];
          norms.state_bias = &state.refs[narrow][1];
        }
        norms.cell_gain = &cell.refs[narrow][0];
        norms.cell_bias = &cell.refs[narrow][1];
        return norms;
      };
      for (const bool narrow : {true, false}) {
        kernels.lstm_step_forward(norms_for(narrow), outputs.ref(narrow), activations.ref(narrow),
                                  cell_values.ref(narrow), statistics.ref(narrow), gx.ref(narrow),
                                  gh.ref(narrow), h_prev.ref(narrow), c_prev.ref(narrow),
                                  &mask_refs[narrow]);
      }
      CHECK_NO_MISMATCH(twin_mismatch(outputs, "[h | c]"));
      CHECK_NO_MISMATCH(twin_mismatch(activations, "activations"));
      CHECK_NO_MISMATCH(twin_mismatch(cell_values, "the normalised cell"));
      CHECK_NO_MISMATCH(twin_mismatch(statistics, "statistics"));

      const Twin saved_outputs{outputs.stored, to_float32(outputs.stored)};
      const Twin saved_activations{activations.stored, to_float32(activations.stored)};
      const Twin saved_cell{cell_values.stored, to_float32(cell_values.stored)};
      const Twin saved_statistics{statistics.stored, statistics.stored};
      const Twin dstate = input_twin(device, {B, 2 * H}, generator);
      const Twin dgx = output_twin(device, {B, 4 * H}), dgh = output_twin(device, {B, 4 * H});
      const Twin dh_prev = output_twin(device, {B, H}), dc_prev = output_twin(device, {B, H});
      const auto state_grads = gradients(4 * H), cell_grads = gradients(H);
      for (const bool narrow : {true, false}) {
        const backend::TensorRef grads[4] = {state_grads[0].ref(narrow), state_grads[1].ref(narrow),
                                             cell_grads[0].ref(narrow), cell_grads[1].ref(narrow)};
        backend::LstmStepNormGrads wanted{nullptr, nullptr, &grads[2], &grads[3]};
        if (state_norm) wanted.state_gain = &grads[0], wanted.state_bias = &grads[1];
        kernels.lstm_step_backward(
            norms_for(narrow), dgx.ref(narrow), dgh.ref(narrow), dh_prev.ref(narrow),
            dc_prev.ref(narrow), wanted, dstate.ref(narrow), saved_outputs.ref(narrow),
            saved_activations.ref(narrow), saved_cell.ref(narrow), saved_statistics.ref(narrow),
            gh.ref(narrow), c_prev.ref(narrow), &mask_refs[narrow]);
      }
      CHECK_NO_MISMATCH(twin_mismatch(dgx, "dgx"));
      CHECK_NO_MISMATCH(twin_mismatch(dgh, "dgh"));
      CHECK_NO_MISMATCH(twin_mismatch(dh_prev, "dh_prev"));
      CHECK_NO_MISMATCH(twin_mismatch(dc_prev, "dc_prev"));
      if (state_norm) {
        CHECK_NO_MISMATCH(twin_mismatch(state_grads[0], "the state norm's gain gradient"));
        CHECK_NO_MISMATCH(twin_mismatch(state_grads[1], "the state norm's bias gradient"));
      }
      CHECK_NO_MISMATCH(twin_mismatch(cell_grads[0], "the cell norm's gain gradient"));
      CHECK_NO_MISMATCH(twin_mismatch(cell_grads[1], "the cell norm's bias gradient"));
    }
  }
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

TEST_CASE("bfloat16 kernels: pooling and batch norm are the float32 kernels, rounded once") {
  for (const Device device : devices_present()) {
    CAPTURE(device);
    Generator generator(49);
    backend::Backend& kernels = backend::backend_for(device);
    {
      INFO("max and average pooling, 3 x 3 windows at stride 2: pixels in several windows");
      const backend::Window2d window{.kernel_h = 3,
                                     .kernel_w = 3,
                                     .stride_h = 2,
                                     .stride_w = 2,
                                     .padding_h = 1,
                                     .padding_w = 1};
      const Twin x = input_twin(device, {3, 5, 13, 13}, generator);
      const Twin dy = input_twin(device, {3, 5, 7, 7}, generator);
      const Twin maxima = output_twin(device, {3, 5, 7, 7}),
                 means = output_twin(device, {3, 5, 7, 7});
      const Twin max_dx = output_twin(device, {3, 5, 13, 13}),
                 mean_dx = output_twin(device, {3, 5, 13, 13});
      Tensor indices[2];
      for (const bool narrow : {true, false}) {
        Tensor& where = indices[narrow ? 0 : 1];
        where = empty({3, 5, 7, 7}, {.dtype = DType::Int64, .device = device});
        kernels.max_pool2d(maxima.ref(narrow), detail::ref(where), x.ref(narrow), window);
        kernels.max_pool2d_backward(max_dx.ref(narrow), dy.ref(narrow), detail::ref(where));
        kernels.avg_pool2d(means.ref(narrow), x.ref(narrow), window);
        kernels.avg_pool2d_backward(mean_dx.ref(narrow), dy.ref(narrow), window);
      }
      CHECK_NO_MISMATCH(twin_mismatch(maxima, "max_pool2d"));
      CHECK_NO_MISMATCH(bits_mismatch(indices[0], indices[1], "max_pool2d's indices"));
      CHECK_NO_MISMATCH(twin_mismatch(max_dx, "max_pool2d_backward"));
      CHECK_NO_MISMATCH(twin_mismatch(means, "avg_pool2d"));
      CHECK_NO_MISMATCH(twin_mismatch(mean_dx, "avg_pool2d_backward"));
    }
    {
      INFO("batch norm over planes (S >= 32) and columns (S < 32), training and evaluation");
      for (const Shape& shape : {Shape{6, 4, 40}, Shape{9, 6, 5}}) {
        CAPTURE(shape);
        const std::int64_t channels = shape[1];
        const Twin x = input_twin(device, shape, generator, 2.0),
                   dy = input_twin(device, shape, generator);
        const Twin gain = input_twin(device, {channels}, generator),
                   bias = input_twin(device, {channels}, generator);
        const TensorOptions doubles{.dtype = DType::Float64, .device = device};
        Tensor statistics[2][3];  // [narrow][mean, variance, rstd]
        const Twin y = output_twin(device, shape), dx = output_twin(device, shape);
        const Twin dgain = output_twin(device, {channels}), dbias = output_twin(device, {channels});
        for (const bool training : {true, false}) {
          CAPTURE(training);
          for (const bool narrow : {true, false}) {
            Tensor(&s)[3] = statistics[narrow ? 0 : 1];
            for (Tensor& statistic : s) statistic = empty({channels}, doubles);
            kernels.batch_norm_statistics(detail::ref(s[0]), detail::ref(s[1]), detail::ref(s[2]),
                                          x.ref(narrow), 1e-5);
            const backend::TensorRef gain_ref = gain.ref(narrow), bias_ref = bias.ref(narrow);
            const backend::TensorRef dgain_ref = dgain.ref(narrow), dbias_ref = dbias.ref(narrow);
            kernels.batch_norm_forward(y.ref(narrow), x.ref(narrow), detail::ref(s[0]),
                                       detail::ref(s[2]), &gain_ref, &bias_ref);
            kernels.batch_norm_backward(dx.ref(narrow), &dgain_ref, &dbias_ref, dy.ref(narrow),
                                        x.ref(narrow), detail::ref(s[0]), detail::ref(s[2]),
                                        &gain_ref, training);
          }
          for (int k = 0; k < 3; ++k)
            CHECK_NO_MISMATCH(bits_mismatch(statistics[0][k], statistics[1][k], "statistics"));
          CHECK_NO_MISMATCH(twin_mismatch(y, "y"));
          CHECK_NO_MISMATCH(twin_mismatch(dx, "dx"));
          CHECK_NO_MISMATCH(twin_mismatch(dgain, "dgain"));
          CHECK_NO_MISMATCH(twin_mismatch(dbias, "dbias"));
        }
      }
    }
  }
}

// The implicit-GEMM convolution gathers its columns into float32 slices and runs the float32
// kernel's multiply-add chains, so on bfloat16 it is that kernel, bit for bit, rounded once.
// (The convolution by columns hands bfloat16 to cuBLAS, which adds in another order than its
// float32 product: test_bfloat16.cpp holds it to the CPU within a bfloat16 step.)
TEST_CASE("bfloat16 kernels: implicit-GEMM convolutions are the float32 kernels, rounded once") {
  for (const Device device : devices_present()) {
    CAPTURE(device);
    Generator generator(50);
    backend::Backend& kernels = backend::backend_for(device);
    const cuda::ConvAlgorithm before = cuda::conv_algorithm();
    cuda::set_conv_algorithm(cuda::ConvAlgorithm::ImplicitGemm);
    const backend::Window2d window{
        .kernel_h = 3, .kernel_w = 3, .stride_h = 2, .stride_w = 2, .padding_h = 1, .padding_w = 1};
    // 70 output channels and 8 x 8 x 8 outputs: partial tiles in both dimensions, and the
    // weight gradient's outputs in two splits.
    const Twin x = input_twin(device, {8, 5, 15, 15}, generator),
               weight = input_twin(device, {70, 5, 3, 3}, generator);
    const Twin bias = input_twin(device, {70}, generator),
               dy = input_twin(device, {8, 70, 8, 8}, generator);
    const Twin y = output_twin(device, {8, 70, 8, 8}), dw = output_twin(device, {70, 5, 3, 3});
    for (const bool narrow : {true, false}) {
      const backend::TensorRef bias_ref = bias.ref(narrow);
      kernels.conv2d(y.ref(narrow), x.ref(narrow), weight.ref(narrow), &bias_ref, window);
      kernels.conv2d_weight_gradient(dw.ref(narrow), x.ref(narrow), dy.ref(narrow), window);
    }
    cuda::set_conv_algorithm(before);
    CHECK_NO_MISMATCH(twin_mismatch(y, "y"));
    CHECK_NO_MISMATCH(twin_mismatch(dw, "dw"));
  }
}

namespace {

// The bytes the GPU's caching allocator takes for a request: 512-byte granules below 1 MiB,
// 2 MiB ones above (backends/cuda/cuda_backend.cpp).
std::size_t allocator_block(std::size_t bytes) {
  const std::size_t granule = bytes < (std::size_t{1} << 20) ? 512 : std::size_t{2} << 20;
  return (bytes + granule - 1) / granule * granule;
}

// Runs `kernels`, which write into tensors made beforehand, and checks that the device's
// allocator handed out at most `scratch` bytes meanwhile and has them back at the end.
void check_scratch(const char* what, std::size_t scratch, const std::function<void()>& kernels) {
  CAPTURE(what);
  const Device gpu = Device::cuda();
  cuda::synchronize();
  reset_peak_memory_stats(gpu);
  const std::size_t allocated = memory_stats(gpu).allocated_bytes;
  kernels();
  cuda::synchronize();
  const MemoryStats stats = memory_stats(gpu);
  CHECK(stats.allocated_bytes == allocated);
  CHECK(stats.peak_allocated_bytes - allocated <= scratch);
}

}  // namespace

// Each kernel's scratch is its own workspaces alone (the float32 values it keeps between
// passes, its partial sums); float32 copies of its operands, as the CPU makes, would take
// several times more (stated beside each case).
TEST_CASE(
    "bfloat16 kernels: recurrent steps, pooling, batch norm and convolutions copy "
    "nothing") {
  SKIP_WITHOUT_CUDA();  // the CPU computes bfloat16 on float32 copies by design
  Generator generator(51);
  const Device gpu = Device::cuda();
  backend::Backend& kernels = backend::backend_for(gpu);
  const auto input = [&](const Shape& shape) {
    return to_bfloat16(randn(shape, generator)).to(gpu);
  };
  const auto output = [&](const Shape& shape, DType dtype = DType::BFloat16) {
    return empty(shape, {.dtype = dtype, .device = gpu});
  };
  const auto r = [](const Tensor& t) { return detail::ref(t); };
  constexpr std::size_t float32_bytes = 4;

  // B x 3H float32 is 3 MiB: every operand's copy would be 1 to 4 MiB.
  const std::int64_t B = 256, H = 1024;
  const Tensor mask = to_bfloat16(ones({B}).to(gpu));
  const backend::TensorRef mask_ref = r(mask);
  {
    const Tensor gx = input({B, 3 * H}), gh = input({B, 3 * H}), h_prev = input({B, H});
    const Tensor dh = input({B, H});
    const Tensor h = output({B, H}), activations = output({B, 3 * H});
    const Tensor dgx = output({B, 3 * H}), dgh = output({B, 3 * H}), dh_prev = output({B, H});
    check_scratch("GRU cell", 0, [&] {
      kernels.gru_cell_forward(r(h), r(activations), r(gx), r(gh), r(h_prev), &mask_ref);
      kernels.gru_cell_backward(r(dgx), r(dgh), r(dh_prev), r(dh), r(activations), r(gh), r(h_prev),
                                &mask_ref);
    });
    // The normed step keeps dy (B x 3H float32) between its passes and writes the products for
    // the gains' gradients (B x 6H float32): 10 MiB in blocks, against some 26 MiB of copies.
    const Tensor gains[4] = {input({2 * H}), input({2 * H}), input({H}), input({H})};
    const backend::TensorRef gain_refs[4] = {r(gains[0]), r(gains[1]), r(gains[2]), r(gains[3])};
    const Tensor grads[4] = {output({2 * H}), output({2 * H}), output({H}), output({H})};
    const backend::TensorRef grad_refs[4] = {r(grads[0]), r(grads[1]), r(grads[2]), r(grads[3])};
    const backend::GruStateNorms norms{layer_norm_params(), rms_norm_params(H), &gain_refs[0],
                                       &gain_refs[1],       &gain_refs[2],      &gain_refs[3]};
    const Tensor normalised = output({B, 3 * H}), statistics = output({4, B}, DType::Float32);
    check_scratch("normed GRU step, forward", 0, [&] {
      kernels.normed_gru_cell_forward(norms, r(h), r(activations), r(normalised), r(statistics),
                                      r(gx), r(gh), r(h_prev), &mask_ref);
    });
    check_scratch(
        "normed GRU step, backward",
        allocator_block(B * 3 * H * float32_bytes) + allocator_block(B * 6 * H * float32_bytes),
        [&] {
          kernels.normed_gru_cell_backward(
              norms, r(dgx), r(dgh), r(dh_prev),
              {&grad_refs[0], &grad_refs[1], &grad_refs[2], &grad_refs[3]}, r(dh), r(activations),
              r(normalised), r(statistics), r(gh), r(h_prev), &mask_ref);
        });
  }
  {
    const Tensor gates = input({B, 4 * H}), c_prev = input({B, H}), dc = input({B, H});
    const Tensor c = output({B, H}), activations = output({B, 3 * H});
    const Tensor dgates = output({B, 4 * H}), dc_prev = output({B, H});
    check_scratch("LSTM cell", 0, [&] {
      kernels.lstm_cell_forward(r(c), r(activations), r(gates), r(c_prev), &mask_ref);
      kernels.lstm_cell_backward(r(dgates), r(dc_prev), r(dc), r(activations), r(c_prev),
                                 &mask_ref);
    });
    // The normed step keeps c and o forward (B x 2H float32, 2 MiB), the gate gradients
    // backward (B x 4H, 4 MiB) beside the products (B x 10H, 10 MiB): copies would take some
    // 18 MiB forward and 34 MiB backward.
    const Tensor gains[4] = {input({4 * H}), input({4 * H}), input({H}), input({H})};
    const backend::TensorRef gain_refs[4] = {r(gains[0]), r(gains[1]), r(gains[2]), r(gains[3])};
    const Tensor grads[4] = {output({4 * H}), output({4 * H}), output({H}), output({H})};
    const backend::TensorRef grad_refs[4] = {r(grads[0]), r(grads[1]), r(grads[2]), r(grads[3])};
    backend::LstmStepNorms norms{.normalise_state = true,
                                 .normalise_cell = true,
                                 .state = rms_norm_params(4 * H),
                                 .cell = layer_norm_params()};
    norms.state_gain = &gain_refs[0];
    norms.state_bias = &gain_refs[1];
    norms.cell_gain = &gain_refs[2];
    norms.cell_bias = &gain_refs[3];
    const Tensor gx = input({B, 4 * H}), gh = input({B, 4 * H}), h_prev = input({B, H});
    const Tensor state = output({B, 2 * H}), step_activations = output({B, 4 * H});
    const Tensor cell = output({B, H}), statistics = output({4, B}, DType::Float32);
    check_scratch("LSTM step, forward", allocator_block(B * 2 * H * float32_bytes), [&] {
      kernels.lstm_step_forward(norms, r(state), r(step_activations), r(cell), r(statistics), r(gx),
                                r(gh), r(h_prev), r(c_prev), &mask_ref);
    });
    const Tensor dstate = input({B, 2 * H});
    const Tensor dgx = output({B, 4 * H}), dgh = output({B, 4 * H}), dh_prev = output({B, H});
    check_scratch(
        "LSTM step, backward",
        allocator_block(B * 4 * H * float32_bytes) + allocator_block(B * 10 * H * float32_bytes),
        [&] {
          kernels.lstm_step_backward(norms, r(dgx), r(dgh), r(dh_prev), r(dc_prev),
                                     {&grad_refs[0], &grad_refs[1], &grad_refs[2], &grad_refs[3]},
                                     r(dstate), r(state), r(step_activations), r(cell),
                                     r(statistics), r(gh), r(c_prev), &mask_ref);
        });
  }
  {
    // Images of 12 MiB in bfloat16 (24 MiB as float32). Max pooling's backward sums into a
    // float32 image (24 MiB), where copies would add those of dy too (30 MiB).
    const Tensor x = input({64, 96, 32, 32}), dy = input({64, 96, 16, 16});
    const backend::Window2d window{
        .kernel_h = 3, .kernel_w = 3, .stride_h = 2, .stride_w = 2, .padding_h = 1, .padding_w = 1};
    const Tensor pooled = output({64, 96, 16, 16}), dx = output({64, 96, 32, 32});
    const Tensor indices = output({64, 96, 16, 16}, DType::Int64);
    check_scratch("pooling forward and average pooling's backward", 0, [&] {
      kernels.max_pool2d(r(pooled), r(indices), r(x), window);
      kernels.avg_pool2d(r(pooled), r(x), window);
      kernels.avg_pool2d_backward(r(dx), r(dy), window);
    });
    check_scratch("max pooling's backward", allocator_block(x.numel() * float32_bytes),
                  [&] { kernels.max_pool2d_backward(r(dx), r(dy), r(indices)); });
    // Batch norm's scratch is per channel: the partial moments of each of its 64 sample blocks
    // (three doubles, 144 KiB in all here) and five float32 coefficients; a float32 copy of x
    // would take 24 MiB.
    const Tensor flat = x.reshape({64, 96, 1024}), flat_dy = input({64, 96, 1024});
    const Tensor y = output({64, 96, 1024}), flat_dx = output({64, 96, 1024});
    const Tensor gain = input({96}), bias = input({96}), dgain = output({96}), dbias = output({96});
    const TensorOptions doubles{.dtype = DType::Float64, .device = gpu};
    const Tensor mean = empty({96}, doubles), variance = empty({96}, doubles);
    const Tensor rstd = empty({96}, doubles);
    const backend::TensorRef gain_ref = r(gain), bias_ref = r(bias);
    const backend::TensorRef dgain_ref = r(dgain), dbias_ref = r(dbias);
    const std::size_t moments = allocator_block(64 * 96 * 3 * sizeof(double));
    check_scratch("batch norm", moments + allocator_block(5 * 96 * float32_bytes), [&] {
      kernels.batch_norm_statistics(r(mean), r(variance), r(rstd), r(flat), 1e-5);
      kernels.batch_norm_forward(r(y), r(flat), r(mean), r(rstd), &gain_ref, &bias_ref);
      kernels.batch_norm_backward(r(flat_dx), &dgain_ref, &dbias_ref, r(flat_dy), r(flat), r(mean),
                                  r(rstd), &gain_ref, true);
    });
  }
  {
    // A 3 x 3 convolution of 96 channels at 32 x 32, batch 32 (6 MiB of bfloat16 images). By
    // columns: a chunk of 9 samples' bfloat16 columns (16 MiB in blocks), their float32 product
    // (4 MiB) and the float32 bias; for the weight gradient the columns, the chunk's rows of dy
    // (2 MiB) and the float32 sums of dw. Copies would add 12 MiB for x alone and double the
    // columns. The implicit GEMM's forward takes no scratch at all.
    const Tensor x = input({32, 96, 32, 32}), weight = input({96, 96, 3, 3}), bias = input({96});
    const Tensor dy = input({32, 96, 32, 32});
    const Tensor y = output({32, 96, 32, 32}), dw = output({96, 96, 3, 3});
    const backend::Window2d window{.kernel_h = 3, .kernel_w = 3, .padding_h = 1, .padding_w = 1};
    const backend::TensorRef bias_ref = r(bias);
    const std::int64_t taps = 96 * 9, positions = 32 * 32;
    const std::int64_t chunk = backend::conv_chunk_samples(taps, positions, 32);
    const std::size_t columns = allocator_block(taps * chunk * positions * 2);
    const cuda::ConvAlgorithm before = cuda::conv_algorithm();
    cuda::set_conv_algorithm(cuda::ConvAlgorithm::Columns);
    check_scratch("convolution by columns",
                  columns + allocator_block(96 * chunk * positions * float32_bytes) +
                      allocator_block(96 * float32_bytes),
                  [&] { kernels.conv2d(r(y), r(x), r(weight), &bias_ref, window); });
    check_scratch("convolution by columns, weight gradient",
                  columns + allocator_block(96 * chunk * positions * 2) +
                      allocator_block(dw.numel() * float32_bytes),
                  [&] { kernels.conv2d_weight_gradient(r(dw), r(x), r(dy), window); });
    cuda::set_conv_algorithm(cuda::ConvAlgorithm::ImplicitGemm);
    check_scratch("implicit-GEMM convolution", 0,
                  [&] { kernels.conv2d(r(y), r(x), r(weight), &bias_ref, window); });
    cuda::set_conv_algorithm(before);
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
