#pragma once
// The backend interface: the small set of primitive kernels that every device implements.
//
// Kernels see memory only through TensorRef, a raw strided view. They never see autograd,
// never allocate tensors, and never check user arguments: the op layer (autograd/) has
// already checked shapes, dtypes and devices, broadcast the operands and allocated the output.
// The one dispatch point is backend_for(device) in backends/dispatch.h.

#include <cstddef>
#include <cstdint>

#include "base/device.h"
#include "base/dtype.h"
#include "base/shape.h"

namespace normgrad::backend {

// A strided view of device memory as a kernel sees it. `data` points at the first element
// (the storage offset is already applied); strides are in elements and may be 0 (broadcast)
// or arbitrary (views). Outputs written by kernels never overlap themselves.
struct TensorRef {
  void* data = nullptr;
  DType dtype = DType::Float32;
  Shape shape;
  Strides strides;

  std::int64_t numel() const { return normgrad::numel(shape); }
  std::int64_t rank() const { return static_cast<std::int64_t>(shape.size()); }
  template <typename T> T* ptr() const { return static_cast<T*>(data); }
};

// out = f(in). `alpha`/`beta` carry the scalar parameters noted beside each op.
enum class UnaryOp : std::uint8_t {
  Neg, Abs, Exp, Log, Sqrt, Rsqrt, Tanh, Sigmoid, Relu, Gelu,  // Gelu: the exact erf form
  Sign,        // -1, 0 or 1
  Square,
  LeakyRelu,   // x > 0 ? x : alpha * x
  Clamp,       // min(max(x, alpha), beta)
  PowScalar,   // x ^ alpha
  AddScalar,   // x + alpha
  MulScalar,   // x * alpha
  RsubScalar,  // alpha - x
  RdivScalar,  // alpha / x
};

// out = f(a, b); a and b have out's shape (broadcast dims carry stride 0).
// The *Grad ops are the fused elementwise halves of backward passes.
enum class BinaryOp : std::uint8_t {
  Add, Sub, Mul, Div, Pow, Maximum, Minimum,
  Eq, Ne, Lt, Le, Gt, Ge,  // 1 where true, 0 where false, in out's dtype
  TanhGrad,                // a = dy, b = y:  dy * (1 - y^2)
  SigmoidGrad,             // a = dy, b = y:  dy * y * (1 - y)
  ReluGrad,                // a = dy, b = x:  x > 0 ? dy : 0
  GeluGrad,                // a = dy, b = x:  dy * d/dx gelu(x)
  LeakyReluGrad,           // a = dy, b = x:  x > 0 ? dy : alpha * dy
};

enum class ReduceOp : std::uint8_t {
  Sum,     // out = scale * sum
  Max,
  Min,
  ArgMax,  // out is int64: the index along the (single) reduced dim, first on ties
  ArgMin,
};

enum class RandomKind : std::uint8_t {
  Uniform,  // uniform on [alpha, beta)
  Normal,   // mean alpha, standard deviation beta
  Integer,  // integers in [alpha, beta)
};

// The fused normalisers. Each row of n values a_1..a_n is normalised by a statistic r:
//   LayerNorm:  mu = mean(a), r = sqrt(mean((a - mu)^2) + eps),        y = g (a - mu) / r + b
//   RMS family: mu = 0,       r = sqrt(sum_{i<=k} a_i^2 / divisor + eps)   (eps inside), or
//                             r = sqrt(sum_{i<=k} a_i^2 / divisor) + eps   (eps outside),
//                                                                        y = g a / r + b
// RMSNorm is k = divisor = n; pRMSNorm k = divisor < n; L2Norm k = n, divisor = 1.
struct NormParams {
  bool centred = false;          // LayerNorm (subtract the mean) or the RMS family
  std::int64_t k = 0;            // leading values that give the statistic (RMS family)
  double divisor = 1;            // the mean square divides the sum of squares by this
  double eps = 1e-5;
  bool eps_inside_sqrt = true;
  // 0: gain and bias have one value per column ([n]). Otherwise the rows are (sample,
  // channel) pairs of a feature map, row r has channel r % channels, and gain and bias have
  // one value per channel ([channels]): the spatial form of the CNN.
  std::int64_t channels = 0;
};

// The two norms of a GRU step's state side (normed_gru_cell_forward): `gates` over the
// [reset | update] block of each row, `candidate` over the candidate block, each with its
// optional gain and bias. Neither has the per-channel form.
struct GruStateNorms {
  NormParams gates, candidate;
  const TensorRef* gates_gain = nullptr;
  const TensorRef* gates_bias = nullptr;
  const TensorRef* candidate_gain = nullptr;
  const TensorRef* candidate_bias = nullptr;
};

// Where normed_gru_cell_backward writes the gradients of those gains and biases (null: not
// wanted).
struct GruStateNormGrads {
  const TensorRef* gates_gain = nullptr;
  const TensorRef* gates_bias = nullptr;
  const TensorRef* candidate_gain = nullptr;
  const TensorRef* candidate_bias = nullptr;
};

// The norms of an LSTM step (lstm_step_forward): `state` over each row's 4H state-side
// pre-activations and `cell` over its H cell values, each applied only where its flag says,
// with its optional gain and bias. Neither has the per-channel form.
struct LstmStepNorms {
  bool normalise_state = false, normalise_cell = false;
  NormParams state, cell;
  const TensorRef* state_gain = nullptr;
  const TensorRef* state_bias = nullptr;
  const TensorRef* cell_gain = nullptr;
  const TensorRef* cell_bias = nullptr;
};

// Where lstm_step_backward writes the gradients of those gains and biases (null: not wanted).
struct LstmStepNormGrads {
  const TensorRef* state_gain = nullptr;
  const TensorRef* state_bias = nullptr;
  const TensorRef* cell_gain = nullptr;
  const TensorRef* cell_bias = nullptr;
};

// Softmax cross-entropy per row of logits x (n classes) with target class t, fused. With the
// log-normaliser lse = log sum_j exp(x_j) and label smoothing e (PyTorch's form: the target
// distribution q = (1 - e) onehot(t) + e / n):
//   loss = (1 - e) (lse - x_t) + e (lse - mean_j x_j),   dx_j = dloss (exp(x_j - lse) - q_j)
// Rows whose target is ignore_index get loss 0 and dx 0.
struct CrossEntropyParams {
  std::int64_t ignore_index = -100;
  double label_smoothing = 0;
};

// One Adam or AdamW step (Kingma & Ba 2015; Loshchilov & Hutter 2019 for the decoupled decay),
// with the bias corrections of step t folded into two scalars:
//   g = grad (+ weight_decay * w unless decoupled)
//   m = beta1 m + (1 - beta1) g,  v = beta2 v + (1 - beta2) g^2
//   w = w - lr * (m / bias_correction1) / (sqrt(v / bias_correction2) + eps)
//       (- lr * weight_decay * w first, when decoupled)
// or, with eps_inside_sqrt, ... / sqrt(v / bias_correction2 + eps), as the WeightNorm paper's
// CIFAR-10 code has it.
struct AdamParams {
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  bool decoupled = false;      // AdamW
  bool eps_inside_sqrt = false;
  double bias_correction1 = 1;  // 1 - beta1^t
  double bias_correction2 = 1;  // 1 - beta2^t
  // Where not null (optim::AdamOptions::capturable): four float64 values in the weight's
  // device memory, lr, lr / bias_correction1, 1 / sqrt(bias_correction2) and
  // 1 / bias_correction2, read by the kernel in place of the fields above, so that the
  // replays of a CUDA graph see each step's values.
  const double* scalars = nullptr;
};

// A 2-d window sliding over the last two dims of an [N, C, H, W] image (convolution and
// pooling). Output position (oh, ow) sees the input rows oh * stride_h - padding_h +
// i * dilation_h for i in [0, kernel_h), and likewise for columns; positions outside the image
// are padding. The output has OH = (H + 2 padding_h - dilation_h (kernel_h - 1) - 1) / stride_h
// + 1 rows (floor division), which the op layer has checked to be at least 1.
struct Window2d {
  std::int64_t kernel_h = 1, kernel_w = 1;
  std::int64_t stride_h = 1, stride_w = 1;
  std::int64_t padding_h = 0, padding_w = 0;
  std::int64_t dilation_h = 1, dilation_w = 1;

  // OH and OW for an input of `height` rows and `width` columns.
  std::int64_t output_height(std::int64_t height) const {
    return (height + 2 * padding_h - dilation_h * (kernel_h - 1) - 1) / stride_h + 1;
  }
  std::int64_t output_width(std::int64_t width) const {
    return (width + 2 * padding_w - dilation_w * (kernel_w - 1) - 1) / stride_w + 1;
  }
};

// Bytes held by a device's allocator. Sizes are those of the blocks handed out (rounded up).
struct MemoryStats {
  std::size_t allocated_bytes = 0;       // in live tensors
  std::size_t peak_allocated_bytes = 0;  // the most allocated at once so far
  std::size_t cached_bytes = 0;          // freed, kept for reuse
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual Device device() const = 0;

  // ---- memory -----------------------------------------------------------------------------
  virtual void* allocate(std::size_t nbytes) = 0;
  virtual void deallocate(void* data, std::size_t nbytes) = 0;
  // Plain byte copies between this device and host memory.
  virtual void copy_to_host(void* host_dst, const void* src, std::size_t nbytes) = 0;
  virtual void copy_from_host(void* dst, const void* host_src, std::size_t nbytes) = 0;
  virtual MemoryStats memory_stats() const = 0;
  // Starts the peak again from what is allocated now, to measure the peak of what follows.
  virtual void reset_peak_memory_stats() = 0;
  // Gives cached blocks back to the system; with enabled = false, stops caching (debugging).
  virtual void empty_cache() = 0;
  virtual void set_caching(bool enabled) = 0;

  // ---- filling and copying ----------------------------------------------------------------
  virtual void fill(const TensorRef& out, double value) = 0;
  // out[i] = start + i * step, over out's elements in row-major order.
  virtual void arange(const TensorRef& out, double start, double step) = 0;
  // Strided copy with dtype conversion; dst and src have the same shape.
  virtual void copy(const TensorRef& dst, const TensorRef& src) = 0;
  // Counter-based random numbers: element i (row-major) depends only on (seed, offset + i),
  // so results are identical for any thread count or device.
  virtual void random(const TensorRef& out, RandomKind kind, std::uint64_t seed,
                      std::uint64_t offset, double alpha, double beta) = 0;
  // The same draw with its counters read from `counters` (int64 [2], on out's device) when the
  // kernel runs: seed = counters[0] and offset = counters[1] + offset, as unsigned bits. A CUDA
  // graph records its draws this way and sets the counters before each replay, so that a
  // replay draws the numbers its eager twin would (core/cuda.h).
  virtual void random_with_counters(const TensorRef& out, RandomKind kind,
                                    const TensorRef& counters, std::uint64_t offset, double alpha,
                                    double beta) = 0;

  // ---- elementwise ------------------------------------------------------------------------
  virtual void unary(UnaryOp op, const TensorRef& out, const TensorRef& in, double alpha,
                     double beta) = 0;
  virtual void binary(BinaryOp op, const TensorRef& out, const TensorRef& a, const TensorRef& b,
                      double alpha) = 0;
  // out = cond != 0 ? a : b; all three have out's shape (broadcast strides allowed).
  virtual void where(const TensorRef& out, const TensorRef& cond, const TensorRef& a,
                     const TensorRef& b) = 0;

  // ---- reductions -------------------------------------------------------------------------
  // `out` has the rank of `in`, with size 1 in every reduced dim (keepdim form); the reduced
  // dims are exactly those where the sizes differ, or those listed in `reduced` (a bit mask),
  // which also covers dims of size 1. Sums are blocked and pairwise, and their order does not
  // depend on the thread count.
  virtual void reduce(ReduceOp op, const TensorRef& out, const TensorRef& in,
                      std::uint64_t reduced, double scale) = 0;

  // ---- linear algebra ---------------------------------------------------------------------
  // out[..., m, n] = sum_k a[..., m, k] * b[..., k, n] for every batch index. All three have
  // the same rank >= 2 and the same batch sizes (broadcast batch dims of a and b carry stride
  // 0). The last two dims of a and b may be row-major or transposed views; anything else is
  // copied first. `out` is contiguous. With accumulate, out += a @ b instead of out = a @ b.
  // out shares a and b's dtype, or is float32 for bfloat16 a and b: their float32 sums,
  // unrounded.
  virtual void matmul(const TensorRef& out, const TensorRef& a, const TensorRef& b,
                      bool accumulate) = 0;

  // ---- softmax ----------------------------------------------------------------------------
  // Along `dim`, numerically stable (the max is subtracted first). log selects log_softmax.
  virtual void softmax(const TensorRef& out, const TensorRef& in, int dim, bool log) = 0;
  // dx from dy and the forward output y:
  //   softmax:     dx = y * (dy - sum(dy * y))
  //   log_softmax: dx = dy - exp(y) * sum(dy)
  virtual void softmax_backward(const TensorRef& dx, const TensorRef& dy, const TensorRef& y,
                                int dim, bool log) = 0;

  // ---- fused normalisers ------------------------------------------------------------------
  // x and y: [rows, n], each contiguous or with evenly strided rows of adjacent values
  // (norm_layout.h); mean and rstd: contiguous [rows], written for backward
  // (mean is 0 for the RMS family; rstd = 1 / r). gain and bias: null or contiguous.
  // Statistics accumulate in double for float32 input, centred two-pass for LayerNorm.
  virtual void norm_forward(const NormParams& params, const TensorRef& y, const TensorRef& mean,
                            const TensorRef& rstd, const TensorRef& x, const TensorRef* gain,
                            const TensorRef* bias) = 0;
  // One pass over x and dy per row. dx and dy: [rows, n], laid out as x may be. dgain and
  // dbias (null when not wanted) have gain's shape and are overwritten, summed over rows from
  // per-thread partial sums combined in a fixed order, so they do not depend on scheduling.
  // With ŷ = (a - mu) / r and dŷ = g dy:
  //   LayerNorm:  da = (dŷ - mean(dŷ) - ŷ mean(dŷ ŷ)) / r
  //   RMS family: da_j = dŷ_j / r - [j <= k] a_j c,  c = sum_i dŷ_i a_i / (divisor r^3)
  //               (eps outside: c = sum_i dŷ_i a_i / (divisor rho r^2), rho = r - eps)
  //   dgain = sum over rows of dy ŷ, dbias = sum over rows of dy.
  virtual void norm_backward(const NormParams& params, const TensorRef& dx, const TensorRef* dgain,
                             const TensorRef* dbias, const TensorRef& dy, const TensorRef& x,
                             const TensorRef& mean, const TensorRef& rstd,
                             const TensorRef* gain) = 0;

  // ---- batch normalisation ----------------------------------------------------------------
  // x, y, dx, dy: contiguous [N, C, S], S the product of the spatial dims (1 for [N, C] input);
  // channel c is normalised over its M = N S values. gain, bias, dgain and dbias: contiguous
  // [C] in x's dtype, gain and bias possibly null (1 and 0). mean, variance and rstd:
  // contiguous [C] float64 for every x, so the statistics keep double precision. Sums are
  // taken over fixed blocks of samples and combined in block order, in double, so no result
  // depends on the thread count.
  //
  // A batch's statistics: mean = sum(x) / M, variance = sum((x - mean)^2) / M (biased;
  // centred within each block, never E[x^2] - E[x]^2), rstd = 1 / sqrt(variance + eps).
  virtual void batch_norm_statistics(const TensorRef& mean, const TensorRef& variance,
                                     const TensorRef& rstd, const TensorRef& x, double eps) = 0;
  // y = g (x - mean) rstd + b: with a batch's statistics in training, with the running
  // estimates (rstd = 1 / sqrt(running_var + eps)) in evaluation.
  virtual void batch_norm_forward(const TensorRef& y, const TensorRef& x, const TensorRef& mean,
                                  const TensorRef& rstd, const TensorRef* gain,
                                  const TensorRef* bias) = 0;
  // With x̂ = (x - mean) rstd, per channel dgain = sum(dy x̂) and dbias = sum(dy) (null when
  // not wanted, else overwritten), and
  //   batch_statistics (training, mean and rstd functions of x):
  //                    dx = g rstd (dy - mean(dy) - x̂ mean(dy x̂))
  //   fixed statistics (evaluation): dx = g rstd dy
  virtual void batch_norm_backward(const TensorRef& dx, const TensorRef* dgain,
                                   const TensorRef* dbias, const TensorRef& dy, const TensorRef& x,
                                   const TensorRef& mean, const TensorRef& rstd,
                                   const TensorRef* gain, bool batch_statistics) = 0;

  // ---- losses -----------------------------------------------------------------------------
  // logits: contiguous [rows, n]; targets: int64 [rows], each in [0, n) or ignore_index
  // (checked: an Error names the first bad one). loss and log_normaliser: [rows].
  virtual void cross_entropy_forward(const CrossEntropyParams& params, const TensorRef& loss,
                                     const TensorRef& log_normaliser, const TensorRef& logits,
                                     const TensorRef& targets) = 0;
  // dlogits: [rows, n]; dloss: [rows] (the upstream gradient of each row's loss).
  virtual void cross_entropy_backward(const CrossEntropyParams& params, const TensorRef& dlogits,
                                      const TensorRef& dloss, const TensorRef& logits,
                                      const TensorRef& targets,
                                      const TensorRef& log_normaliser) = 0;

  // ---- optimizers -------------------------------------------------------------------------
  // One fused pass over a parameter: reads w, grad, m and v once, writes w, m and v. All four
  // are contiguous, of one shape and dtype.
  virtual void adam_update(const AdamParams& params, const TensorRef& weight,
                           const TensorRef& grad, const TensorRef& exp_avg,
                           const TensorRef& exp_avg_sq) = 0;

  // ---- recurrent cells --------------------------------------------------------------------
  // The pointwise part of one time step, fused, over B rows of H units; every operand is
  // contiguous and `mask` ([B], x's dtype) is null or says which rows take the step: a row
  // whose mask is 0 keeps its previous state, and its pre-activations get zero gradient.
  //
  // GRU in the form of Nematus (paper, Appendix A.1): gx and gh [B, 3H] hold the input-side and the
  // state-side pre-activations of [reset r | update u | candidate c], each already normalised:
  //   r = sigmoid(gx_r + gh_r),  u = sigmoid(gx_u + gh_u),  c = tanh(gx_c + r gh_c),
  //   h = u h_prev + (1 - u) c.
  // activations [B, 3H] receives [r | u | c] for the backward pass.
  virtual void gru_cell_forward(const TensorRef& h, const TensorRef& activations,
                                const TensorRef& gx, const TensorRef& gh,
                                const TensorRef& h_prev, const TensorRef* mask) = 0;
  // With d = dh on rows that took the step:
  //   dc~ = d (1 - u) (1 - c^2),  dgx_c = dc~,  dgh_c = r dc~,
  //   dgx_r = dgh_r = dc~ gh_c r (1 - r),  dgx_u = dgh_u = d (h_prev - c) u (1 - u),
  //   dh_prev = d u   (dh_prev = dh on rows that kept their state).
  virtual void gru_cell_backward(const TensorRef& dgx, const TensorRef& dgh,
                                 const TensorRef& dh_prev, const TensorRef& dh,
                                 const TensorRef& activations, const TensorRef& gh,
                                 const TensorRef& h_prev, const TensorRef* mask) = 0;
  // The same step with the state side's norms fused into it (the paper's normed GRU, App. A.1),
  // so a normed step is one kernel after its GEMM, as a plain one is. gh [B, 3H] is the
  // state-side projection before its norms: each row's [reset | update] block (2H values) is
  // normalised by norms.gates and its candidate block (H values) by norms.candidate, as
  // norm_forward does (gains and biases null or contiguous, [2H] and [H]); then the step is
  // gru_cell_forward's on the normalised gh. normalised [B, 3H] receives the normalised gh,
  // statistics [4, B] the mean and rstd of the gates block and then of the candidate block,
  // activations [B, 3H] [r | u | c]. Every [B, *] operand is contiguous.
  virtual void normed_gru_cell_forward(const GruStateNorms& norms, const TensorRef& h,
                                       const TensorRef& activations, const TensorRef& normalised,
                                       const TensorRef& statistics, const TensorRef& gx,
                                       const TensorRef& gh, const TensorRef& h_prev,
                                       const TensorRef* mask) = 0;
  // gru_cell_backward's gradients of gx and of the normalised gh, then each block's
  // norm_backward: dgh [B, 3H] is the gradient of the raw gh, and the gains' and biases'
  // gradients in `affine` (null where not wanted) are overwritten with their sums over rows, in
  // an order that depends on the row count alone.
  virtual void normed_gru_cell_backward(const GruStateNorms& norms, const TensorRef& dgx,
                                        const TensorRef& dgh, const TensorRef& dh_prev,
                                        const GruStateNormGrads& affine, const TensorRef& dh,
                                        const TensorRef& activations, const TensorRef& normalised,
                                        const TensorRef& statistics, const TensorRef& gh,
                                        const TensorRef& h_prev, const TensorRef* mask) = 0;
  // LSTM cell state: gates [B, 4H] holds the pre-activations [i | f | g | o] (PyTorch's order);
  //   c = sigmoid(f) c_prev + sigmoid(i) tanh(g).
  // o is not read: the output h = sigmoid(o) tanh(norm(c)) comes after the cell's norm.
  // activations [B, 3H] receives [sigmoid(i) | sigmoid(f) | tanh(g)].
  virtual void lstm_cell_forward(const TensorRef& c, const TensorRef& activations,
                                 const TensorRef& gates, const TensorRef& c_prev,
                                 const TensorRef* mask) = 0;
  // dgates [B, 4H] (its o part is 0) and dc_prev [B, H] from dc:
  //   di = dc tanh(g) si (1 - si),  df = dc c_prev sf (1 - sf),  dg = dc si (1 - tanh(g)^2),
  //   dc_prev = dc sf   (dc_prev = dc on rows that kept their state).
  virtual void lstm_cell_backward(const TensorRef& dgates, const TensorRef& dc_prev,
                                  const TensorRef& dc, const TensorRef& activations,
                                  const TensorRef& c_prev, const TensorRef* mask) = 0;
  // A whole LSTM step after its GEMM, with its norms fused in (the paper's normed LSTM, App.
  // A.2): with gh [B, 4H] the raw state-side projection and gx [B, 4H] the (normalised) input
  // side,
  //   a = gx + Ns(gh)   (Ns = norms.state over each row's 4H values, or none),
  //   i, f, o = sigmoid(a_i, a_f, a_o), g = tanh(a_g),  c = f c_prev + i g,
  //   n = Nc(c)         (Nc = norms.cell over H values, or none),  h = o tanh(n).
  // Rows whose mask is 0 keep h_prev and c_prev. state [B, 2H] receives [h | c], activations
  // [B, 4H] [i | f | g | o], cell [B, H] n, statistics [4, B] the mean and rstd of Ns and then
  // of Nc (0 and 1 for a norm left out). Every operand is contiguous.
  virtual void lstm_step_forward(const LstmStepNorms& norms, const TensorRef& state,
                                 const TensorRef& activations, const TensorRef& cell,
                                 const TensorRef& statistics, const TensorRef& gx,
                                 const TensorRef& gh, const TensorRef& h_prev,
                                 const TensorRef& c_prev, const TensorRef* mask) = 0;
  // From dstate [B, 2H] = [dh | dc] (dc: what reaches c from later steps): on rows that took
  // the step, with t = tanh(n),
  //   dn = dh o (1 - t^2),  dc' = dc + Nc's backward of dn,
  //   da = [dc' g i (1 - i) | dc' c_prev f (1 - f) | dc' i (1 - g^2) | dh t o (1 - o)],
  //   dgx = da,  dgh = Ns's backward of da,  dc_prev = dc' f,  dh_prev = 0;
  // on the others dgx = dgh = 0, dh_prev = dh, dc_prev = dc. The gains' and biases' gradients in
  // `affine` (null where not wanted) are overwritten with sums over rows in row order.
  virtual void lstm_step_backward(const LstmStepNorms& norms, const TensorRef& dgx,
                                  const TensorRef& dgh, const TensorRef& dh_prev,
                                  const TensorRef& dc_prev, const LstmStepNormGrads& affine,
                                  const TensorRef& dstate, const TensorRef& state,
                                  const TensorRef& activations, const TensorRef& cell,
                                  const TensorRef& statistics, const TensorRef& gh,
                                  const TensorRef& c_prev, const TensorRef* mask) = 0;

  // ---- convolution and pooling -----------------------------------------------------------
  // All operands are contiguous but columns, whose rows are; images are [N, C, H, W], the
  // outputs [N, C, OH, OW] (Window2d gives OH and OW; the kernels read them from the output's
  // shape).
  //
  // im2col: columns [N, C kh kw, OH OW], row (c, i, j) = c kh kw + i kw + j, column
  // (oh, ow) = oh OW + ow, holding the input value that kernel tap (i, j) of channel c sees at
  // output (oh, ow), or 0 where that tap falls in the padding. A convolution is then one GEMM
  // per sample: y[n] = W [O, C kh kw] @ columns[n]. The strides of N and of the rows are free
  // (the last dim's is 1), so columns may be the view [N, K, L] of a matrix [K, N L], which
  // turns the N GEMMs into one: W @ [K, N L].
  virtual void im2col(const TensorRef& columns, const TensorRef& image, const Window2d& window) = 0;
  // The adjoint of im2col: image (overwritten) = the sum, over every column entry, of the
  // entry added at the pixel it was read from; entries in the padding are dropped. Each
  // (sample, channel) plane is summed by one thread in a fixed order: deterministic.
  virtual void col2im(const TensorRef& image, const TensorRef& columns, const Window2d& window) = 0;
  // y [N, O, OH, OW] (overwritten) = the convolution (cross-correlation, as in every deep
  // learning library) of x [N, C, H, W] with weight [O, C, kh, kw]: the GEMM of the weight, as
  // [O, C kh kw], with each sample's im2col columns, plus bias[o] on every output of channel o
  // when bias is not null. Every output is summed in one fixed order.
  virtual void conv2d(const TensorRef& y, const TensorRef& x, const TensorRef& weight,
                      const TensorRef* bias, const Window2d& window) = 0;
  // dw [O, C, kh, kw] (overwritten) = conv2d's weight gradient: the sum over samples n of
  // dy[n], as [O, OH OW], times the transposed im2col columns of x[n]. All contiguous; every
  // element is summed in one fixed order.
  virtual void conv2d_weight_gradient(const TensorRef& dw, const TensorRef& x,
                                      const TensorRef& dy, const Window2d& window) = 0;
  // out = the largest input in each window (padding never wins; a NaN does), indices (int64,
  // out's shape) = its position h W + w within its plane, the first one on ties. A window
  // wholly in the padding (possible only with dilation) gives -inf and index -1.
  virtual void max_pool2d(const TensorRef& out, const TensorRef& indices, const TensorRef& in,
                          const Window2d& window) = 0;
  // dx (overwritten, [N, C, H, W]) = dy added at the positions `indices` names (-1: nowhere),
  // plane by plane.
  virtual void max_pool2d_backward(const TensorRef& dx, const TensorRef& dy,
                                   const TensorRef& indices) = 0;
  // out = the sum of each window's in-image values divided by kh kw: the padding counts as
  // zeros (PyTorch's default count_include_pad = true).
  virtual void avg_pool2d(const TensorRef& out, const TensorRef& in, const Window2d& window) = 0;
  // dx (overwritten) = the sum over the windows that contain a pixel of dy / (kh kw).
  virtual void avg_pool2d_backward(const TensorRef& dx, const TensorRef& dy,
                                   const Window2d& window) = 0;

  // ---- indexing ---------------------------------------------------------------------------
  // out = in.index_select(dim, index): out[.., i, ..] = in[.., index[i], ..]. index is int64
  // and 1-d; every entry has been checked to lie in [0, in.shape[dim]).
  virtual void index_select(const TensorRef& out, const TensorRef& in, int dim,
                            const TensorRef& index) = 0;
  // out[.., index[i], ..] += src[.., i, ..]. Deterministic: repeated indices add in order.
  virtual void index_add(const TensorRef& out, int dim, const TensorRef& index,
                         const TensorRef& src) = 0;
  // out[i][j][k] = in[i][index[i][j][k]][k] (for dim = 1); index has out's shape.
  virtual void gather(const TensorRef& out, const TensorRef& in, int dim,
                      const TensorRef& index) = 0;
  // out[i][index[i][j][k]][k] += src[i][j][k] (for dim = 1). Deterministic.
  virtual void scatter_add(const TensorRef& out, int dim, const TensorRef& index,
                           const TensorRef& src) = 0;

  // ---- threads ----------------------------------------------------------------------------
  virtual void set_num_threads(int threads) = 0;
};

}  // namespace normgrad::backend
