#include "backends/profiling_backend.h"

#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "backends/op_names.h"
#include "profiler/recorder.h"

namespace normgrad::backend {

namespace {

using Operands = std::initializer_list<const TensorRef*>;

double elements(const TensorRef& view) { return static_cast<double>(view.numel()); }

void append_shape(std::string& text, const TensorRef& view) {
  text += '[';
  for (std::size_t d = 0; d < view.shape.size(); ++d) {
    if (d > 0) text += ',';
    text += std::to_string(view.shape[d]);
  }
  text += ']';
}

// Times one kernel from construction to destruction, and records it with its operands
// (outputs, then inputs; null ones are optional operands left out).
class Recorded {
 public:
  Recorded(const Backend& inner, const char* name, const char* variant, const char* family,
           Operands outputs, Operands inputs, double flops) {
    record_.name = name;
    record_.variant = variant;
    record_.family = family;
    record_.device = inner.device();
    record_.flops = flops;
    record_.backward_of = profiler::current_backward();
    record_.span = profiler::current_span();
    bool first = true;
    for (const TensorRef* out : outputs) {
      if (out == nullptr) continue;
      if (first) record_.dtype = out->dtype;
      record_.shapes += first ? "" : " ";
      append_shape(record_.shapes, *out);
      record_.bytes += distinct_bytes(*out);
      first = false;
    }
    record_.shapes += " <-";
    for (const TensorRef* in : inputs) {
      if (in == nullptr) continue;
      record_.shapes += ' ';
      append_shape(record_.shapes, *in);
      record_.bytes += distinct_bytes(*in);
    }
    record_.start_ns = profiler::now_ns();
  }
  ~Recorded() {
    record_.end_ns = profiler::now_ns();
    profiler::record_op(std::move(record_));
  }
  Recorded(const Recorded&) = delete;
  Recorded& operator=(const Recorded&) = delete;

  void add_bytes(double bytes) { record_.bytes += bytes; }

 private:
  profiler::OpRecord record_;
};

// The floating-point operations counted for each kernel. One rule throughout: every add,
// multiply, compare, exp, tanh or square root of one value is one operation; a select, a copy
// or an index is none. Where a fused kernel does work of several such steps per element, its
// count is that of the steps, written beside it.
class ProfilingBackend final : public Backend {
 public:
  explicit ProfilingBackend(Backend& inner) : inner_(inner) {}

  Device device() const override { return inner_.device(); }

  void* allocate(std::size_t nbytes) override {
    void* data = inner_.allocate(nbytes);
    profiler::record_memory(inner_.device(), inner_.memory_stats().allocated_bytes);
    return data;
  }
  void deallocate(void* data, std::size_t nbytes) override {
    inner_.deallocate(data, nbytes);
    profiler::record_memory(inner_.device(), inner_.memory_stats().allocated_bytes);
  }
  // A transfer reads and writes its bytes once each.
  void copy_to_host(void* host_dst, const void* src, std::size_t nbytes) override {
    Recorded r(inner_, "copy_to_host", "", "copies", {}, {}, 0);
    r.add_bytes(2 * static_cast<double>(nbytes));
    inner_.copy_to_host(host_dst, src, nbytes);
  }
  void copy_from_host(void* dst, const void* host_src, std::size_t nbytes) override {
    Recorded r(inner_, "copy_from_host", "", "copies", {}, {}, 0);
    r.add_bytes(2 * static_cast<double>(nbytes));
    inner_.copy_from_host(dst, host_src, nbytes);
  }
  MemoryStats memory_stats() const override { return inner_.memory_stats(); }
  void reset_peak_memory_stats() override { inner_.reset_peak_memory_stats(); }
  void empty_cache() override { inner_.empty_cache(); }
  void set_caching(bool enabled) override { inner_.set_caching(enabled); }
  void set_num_threads(int threads) override { inner_.set_num_threads(threads); }

  void fill(const TensorRef& out, double value) override {
    const Recorded r(inner_, "fill", "", "copies", {&out}, {}, 0);
    inner_.fill(out, value);
  }
  void arange(const TensorRef& out, double start, double step) override {
    const Recorded r(inner_, "arange", "", "copies", {&out}, {}, elements(out));
    inner_.arange(out, start, step);
  }
  void copy(const TensorRef& dst, const TensorRef& src) override {
    const Recorded r(inner_, "copy", "", "copies", {&dst}, {&src}, 0);
    inner_.copy(dst, src);
  }
  // Random numbers are integer work (the counters' rounds) and are counted as none.
  void random(const TensorRef& out, RandomKind kind, std::uint64_t seed, std::uint64_t offset,
              double alpha, double beta) override {
    const Recorded r(inner_, "random", "", "random", {&out}, {}, 0);
    inner_.random(out, kind, seed, offset, alpha, beta);
  }
  void random_with_counters(const TensorRef& out, RandomKind kind, const TensorRef& counters,
                            std::uint64_t offset, double alpha, double beta) override {
    const Recorded r(inner_, "random", "counters", "random", {&out}, {&counters}, 0);
    inner_.random_with_counters(out, kind, counters, offset, alpha, beta);
  }
  // One operation per output element, whatever the function.
  void unary(UnaryOp op, const TensorRef& out, const TensorRef& in, double alpha,
             double beta) override {
    const Recorded r(inner_, "unary", unary_name(op), "elementwise", {&out}, {&in}, elements(out));
    inner_.unary(op, out, in, alpha, beta);
  }
  void binary(BinaryOp op, const TensorRef& out, const TensorRef& a, const TensorRef& b,
              double alpha) override {
    const Recorded r(inner_, "binary", binary_name(op), "elementwise", {&out}, {&a, &b},
                     elements(out));
    inner_.binary(op, out, a, b, alpha);
  }
  void where(const TensorRef& out, const TensorRef& cond, const TensorRef& a,
             const TensorRef& b) override {
    const Recorded r(inner_, "where", "", "elementwise", {&out}, {&cond, &a, &b}, 0);
    inner_.where(out, cond, a, b);
  }
  // One add or compare per input element.
  void reduce(ReduceOp op, const TensorRef& out, const TensorRef& in, std::uint64_t reduced,
              double scale) override {
    const Recorded r(inner_, "reduce", reduce_name(op), "reduce", {&out}, {&in}, elements(in));
    inner_.reduce(op, out, in, reduced, scale);
  }
  // A multiply and an add for each of the K terms of each output element, and one more add
  // per output element when accumulating.
  void matmul(const TensorRef& out, const TensorRef& a, const TensorRef& b,
              bool accumulate) override {
    const double k = static_cast<double>(a.shape.back());
    const Recorded r(inner_, "matmul", "", "matmul", {&out}, {&a, &b},
                     elements(out) * (2 * k + (accumulate ? 1 : 0)));
    inner_.matmul(out, a, b, accumulate);
  }
  // Forward, per element: the row's max, the subtraction, exp, the row's sum, the scale (or the
  // log-normaliser's subtraction): 5. Backward, per element: the product with y (or exp), the
  // row's sum, the subtraction, the scale: 4.
  void softmax(const TensorRef& out, const TensorRef& in, int dim, bool log) override {
    const Recorded r(inner_, "softmax", log ? "log" : "", "softmax", {&out}, {&in},
                     5 * elements(in));
    inner_.softmax(out, in, dim, log);
  }
  void softmax_backward(const TensorRef& dx, const TensorRef& dy, const TensorRef& y, int dim,
                        bool log) override {
    const Recorded r(inner_, "softmax_backward", log ? "log" : "", "softmax", {&dx}, {&dy, &y},
                     4 * elements(dx));
    inner_.softmax_backward(dx, dy, y, dim, log);
  }
  // Forward, per row of n values: the statistic from k of them, 2 per value (square, add) for
  // the RMS family, 4 per value for LayerNorm (add for the mean, subtract, square, add); then
  // per value the scale by 1/r, and a multiply for the gain and an add for the bias when there
  // are ones. Backward, per value: 6 (RMS) or 8 (LayerNorm) for dx, 2 for the gain's gradient
  // and 1 for the bias's.
  void norm_forward(const NormParams& params, const TensorRef& y, const TensorRef& mean,
                    const TensorRef& rstd, const TensorRef& x, const TensorRef* gain,
                    const TensorRef* bias) override {
    const double values = elements(x);
    const double rows = elements(rstd);  // one statistic a row
    const double statistic = params.centred ? 4 * values : 2 * rows * static_cast<double>(params.k);
    const double flops = statistic + values * (1 + (gain ? 1 : 0) + (bias ? 1 : 0));
    const Recorded r(inner_, "norm_forward", params.centred ? "layernorm" : "rms", "norm",
                     {&y, &mean, &rstd}, {&x, gain, bias}, flops);
    inner_.norm_forward(params, y, mean, rstd, x, gain, bias);
  }
  void norm_backward(const NormParams& params, const TensorRef& dx, const TensorRef* dgain,
                     const TensorRef* dbias, const TensorRef& dy, const TensorRef& x,
                     const TensorRef& mean, const TensorRef& rstd, const TensorRef* gain) override {
    const double values = elements(x);
    const double flops = values * ((params.centred ? 8 : 6) + (dgain ? 2 : 0) + (dbias ? 1 : 0));
    const Recorded r(inner_, "norm_backward", params.centred ? "layernorm" : "rms", "norm",
                     {&dx, dgain, dbias}, {&dy, &x, &mean, &rstd, gain}, flops);
    inner_.norm_backward(params, dx, dgain, dbias, dy, x, mean, rstd, gain);
  }
  // Statistics, per value: add, square, add (3). Forward, per value: subtract and scale, then
  // the gain's multiply and the bias's add (2 to 4). Backward, per value: 6 for dx, with the
  // gain's and bias's gradients summed on the way.
  void batch_norm_statistics(const TensorRef& mean, const TensorRef& variance,
                             const TensorRef& rstd, const TensorRef& x, double eps) override {
    const Recorded r(inner_, "batch_norm_statistics", "", "batch_norm", {&mean, &variance, &rstd},
                     {&x}, 3 * elements(x));
    inner_.batch_norm_statistics(mean, variance, rstd, x, eps);
  }
  void batch_norm_forward(const TensorRef& y, const TensorRef& x, const TensorRef& mean,
                          const TensorRef& rstd, const TensorRef* gain,
                          const TensorRef* bias) override {
    const Recorded r(inner_, "batch_norm_forward", "", "batch_norm", {&y},
                     {&x, &mean, &rstd, gain, bias},
                     elements(x) * (2 + (gain ? 1 : 0) + (bias ? 1 : 0)));
    inner_.batch_norm_forward(y, x, mean, rstd, gain, bias);
  }
  void batch_norm_backward(const TensorRef& dx, const TensorRef* dgain, const TensorRef* dbias,
                           const TensorRef& dy, const TensorRef& x, const TensorRef& mean,
                           const TensorRef& rstd, const TensorRef* gain,
                           bool batch_statistics) override {
    const Recorded r(inner_, "batch_norm_backward", "", "batch_norm", {&dx, dgain, dbias},
                     {&dy, &x, &mean, &rstd, gain}, 6 * elements(x));
    inner_.batch_norm_backward(dx, dgain, dbias, dy, x, mean, rstd, gain, batch_statistics);
  }
  // Forward, per logit: the row's max, the subtraction, exp, the row's sum (4). Backward, per
  // logit: exp of the log-probability, the target's subtraction, the scale (3).
  void cross_entropy_forward(const CrossEntropyParams& params, const TensorRef& loss,
                             const TensorRef& log_normaliser, const TensorRef& logits,
                             const TensorRef& targets) override {
    const Recorded r(inner_, "cross_entropy_forward", "", "cross_entropy", {&loss, &log_normaliser},
                     {&logits, &targets}, 4 * elements(logits));
    inner_.cross_entropy_forward(params, loss, log_normaliser, logits, targets);
  }
  void cross_entropy_backward(const CrossEntropyParams& params, const TensorRef& dlogits,
                              const TensorRef& dloss, const TensorRef& logits,
                              const TensorRef& targets, const TensorRef& log_normaliser) override {
    const Recorded r(inner_, "cross_entropy_backward", "", "cross_entropy", {&dlogits},
                     {&dloss, &logits, &targets, &log_normaliser}, 3 * elements(logits));
    inner_.cross_entropy_backward(params, dlogits, dloss, logits, targets, log_normaliser);
  }
  // Per weight: the first moment (3), the second (4), the step (square root, add, divide,
  // scale, subtract: 5), and 2 more for weight decay.
  void adam_update(const AdamParams& params, const TensorRef& weight, const TensorRef& grad,
                   const TensorRef& exp_avg, const TensorRef& exp_avg_sq) override {
    const Recorded r(inner_, "adam_update", "", "adam", {&weight, &exp_avg, &exp_avg_sq}, {&grad},
                     elements(weight) * (12 + (params.weight_decay != 0 ? 2 : 0)));
    inner_.adam_update(params, weight, grad, exp_avg, exp_avg_sq);
  }
  // GRU cell, per unit of h: the three gates' sums (3), two sigmoids and a tanh (3), the reset
  // gate's product and add (2), the blend (3): 11 forward; backward 20.
  void gru_cell_forward(const TensorRef& h, const TensorRef& activations, const TensorRef& gx,
                        const TensorRef& gh, const TensorRef& h_prev,
                        const TensorRef* mask) override {
    const Recorded r(inner_, "gru_cell_forward", "", "recurrent", {&h, &activations},
                     {&gx, &gh, &h_prev, mask}, 11 * elements(h));
    inner_.gru_cell_forward(h, activations, gx, gh, h_prev, mask);
  }
  void gru_cell_backward(const TensorRef& dgx, const TensorRef& dgh, const TensorRef& dh_prev,
                         const TensorRef& dh, const TensorRef& activations, const TensorRef& gh,
                         const TensorRef& h_prev, const TensorRef* mask) override {
    const Recorded r(inner_, "gru_cell_backward", "", "recurrent", {&dgx, &dgh, &dh_prev},
                     {&dh, &activations, &gh, &h_prev, mask}, 20 * elements(dh));
    inner_.gru_cell_backward(dgx, dgh, dh_prev, dh, activations, gh, h_prev, mask);
  }
  // The normed GRU step: the cell's count, and LayerNorm's or RMSNorm's over the gates'
  // and the candidate's pre-activations (5 or 7 per value forward, 9 or 11 backward).
  void normed_gru_cell_forward(const GruStateNorms& norms, const TensorRef& h,
                               const TensorRef& activations, const TensorRef& normalised,
                               const TensorRef& statistics, const TensorRef& gx,
                               const TensorRef& gh, const TensorRef& h_prev,
                               const TensorRef* mask) override {
    const double units = elements(h);
    const double norm = 3 * units * (norms.gates.centred ? 7 : 5);
    const Recorded r(inner_, "normed_gru_cell_forward", "", "recurrent",
                     {&h, &activations, &normalised, &statistics},
                     {&gx, &gh, &h_prev, mask, norms.gates_gain, norms.gates_bias,
                      norms.candidate_gain, norms.candidate_bias},
                     11 * units + norm);
    inner_.normed_gru_cell_forward(norms, h, activations, normalised, statistics, gx, gh, h_prev,
                                   mask);
  }
  void normed_gru_cell_backward(const GruStateNorms& norms, const TensorRef& dgx,
                                const TensorRef& dgh, const TensorRef& dh_prev,
                                const GruStateNormGrads& affine, const TensorRef& dh,
                                const TensorRef& activations, const TensorRef& normalised,
                                const TensorRef& statistics, const TensorRef& gh,
                                const TensorRef& h_prev, const TensorRef* mask) override {
    const double units = elements(dh);
    const double norm = 3 * units * (norms.gates.centred ? 11 : 9);
    const Recorded r(inner_, "normed_gru_cell_backward", "", "recurrent",
                     {&dgx, &dgh, &dh_prev, affine.gates_gain, affine.gates_bias,
                      affine.candidate_gain, affine.candidate_bias},
                     {&dh, &activations, &normalised, &statistics, &gh, &h_prev, mask},
                     20 * units + norm);
    inner_.normed_gru_cell_backward(norms, dgx, dgh, dh_prev, affine, dh, activations, normalised,
                                    statistics, gh, h_prev, mask);
  }
  // LSTM cell, per unit of c: four activations (4), the new cell (3), the output's tanh and
  // product (2): 9 forward; backward 16.
  void lstm_cell_forward(const TensorRef& c, const TensorRef& activations, const TensorRef& gates,
                         const TensorRef& c_prev, const TensorRef* mask) override {
    const Recorded r(inner_, "lstm_cell_forward", "", "recurrent", {&c, &activations},
                     {&gates, &c_prev, mask}, 9 * elements(c));
    inner_.lstm_cell_forward(c, activations, gates, c_prev, mask);
  }
  void lstm_cell_backward(const TensorRef& dgates, const TensorRef& dc_prev, const TensorRef& dc,
                          const TensorRef& activations, const TensorRef& c_prev,
                          const TensorRef* mask) override {
    const Recorded r(inner_, "lstm_cell_backward", "", "recurrent", {&dgates, &dc_prev},
                     {&dc, &activations, &c_prev, mask}, 16 * elements(dc));
    inner_.lstm_cell_backward(dgates, dc_prev, dc, activations, c_prev, mask);
  }
  // The LSTM step: the gates' sums (4 per unit), the cell's count, and a norm's over the
  // state's four gates and over the cell when they are normalised (5 or 7 per value forward,
  // 9 or 11 backward).
  void lstm_step_forward(const LstmStepNorms& norms, const TensorRef& state,
                         const TensorRef& activations, const TensorRef& cell,
                         const TensorRef& statistics, const TensorRef& gx, const TensorRef& gh,
                         const TensorRef& h_prev, const TensorRef& c_prev,
                         const TensorRef* mask) override {
    const double units = elements(c_prev);
    const double per_norm = norms.state.centred ? 7 : 5;
    const double norm = (norms.normalise_state ? 4 * units * per_norm : 0) +
                        (norms.normalise_cell ? units * per_norm : 0);
    const Recorded r(inner_, "lstm_step_forward", "", "recurrent",
                     {&state, &activations, &cell, &statistics},
                     {&gx, &gh, &h_prev, &c_prev, mask, norms.state_gain, norms.state_bias,
                      norms.cell_gain, norms.cell_bias},
                     13 * units + norm);
    inner_.lstm_step_forward(norms, state, activations, cell, statistics, gx, gh, h_prev, c_prev,
                             mask);
  }
  void lstm_step_backward(const LstmStepNorms& norms, const TensorRef& dgx, const TensorRef& dgh,
                          const TensorRef& dh_prev, const TensorRef& dc_prev,
                          const LstmStepNormGrads& affine, const TensorRef& dstate,
                          const TensorRef& state, const TensorRef& activations,
                          const TensorRef& cell, const TensorRef& statistics, const TensorRef& gh,
                          const TensorRef& c_prev, const TensorRef* mask) override {
    const double units = elements(c_prev);
    const double per_norm = norms.state.centred ? 11 : 9;
    const double norm = (norms.normalise_state ? 4 * units * per_norm : 0) +
                        (norms.normalise_cell ? units * per_norm : 0);
    const Recorded r(inner_, "lstm_step_backward", "", "recurrent",
                     {&dgx, &dgh, &dh_prev, &dc_prev, affine.state_gain, affine.state_bias,
                      affine.cell_gain, affine.cell_bias},
                     {&dstate, &state, &activations, &cell, &statistics, &gh, &c_prev, mask},
                     16 * units + norm);
    inner_.lstm_step_backward(norms, dgx, dgh, dh_prev, dc_prev, affine, dstate, state, activations,
                              cell, statistics, gh, c_prev, mask);
  }
  void im2col(const TensorRef& columns, const TensorRef& image, const Window2d& window) override {
    const Recorded r(inner_, "im2col", "", "conv", {&columns}, {&image}, 0);
    inner_.im2col(columns, image, window);
  }
  // One add per column value folded back.
  void col2im(const TensorRef& image, const TensorRef& columns, const Window2d& window) override {
    const Recorded r(inner_, "col2im", "", "conv", {&image}, {&columns}, elements(columns));
    inner_.col2im(image, columns, window);
  }
  // A multiply and an add for each weight of each output value (C_in kh kw of them), and the
  // bias's add.
  void conv2d(const TensorRef& y, const TensorRef& x, const TensorRef& weight,
              const TensorRef* bias, const Window2d& window) override {
    const double per_output = static_cast<double>(weight.numel() / weight.shape[0]);
    const Recorded r(inner_, "conv2d", "", "conv", {&y}, {&x, &weight, bias},
                     elements(y) * (2 * per_output + (bias ? 1 : 0)));
    inner_.conv2d(y, x, weight, bias, window);
  }
  // A multiply and an add for each weight, for each output position of each image.
  void conv2d_weight_gradient(const TensorRef& dw, const TensorRef& x, const TensorRef& dy,
                              const Window2d& window) override {
    const double positions = elements(dy) / static_cast<double>(dy.shape[1]);
    const Recorded r(inner_, "conv2d_weight_gradient", "", "conv", {&dw}, {&x, &dy},
                     2 * elements(dw) * positions);
    inner_.conv2d_weight_gradient(dw, x, dy, window);
  }
  // Max pooling compares each window's values (kh kw per output); its backward routes each
  // gradient to its index (none). Average pooling adds them and scales (kh kw per output);
  // its backward spreads each gradient over its window (kh kw per gradient).
  void max_pool2d(const TensorRef& out, const TensorRef& indices, const TensorRef& in,
                  const Window2d& window) override {
    const Recorded r(inner_, "max_pool2d", "", "pool", {&out, &indices}, {&in},
                     elements(out) * static_cast<double>(window.kernel_h * window.kernel_w));
    inner_.max_pool2d(out, indices, in, window);
  }
  void max_pool2d_backward(const TensorRef& dx, const TensorRef& dy,
                           const TensorRef& indices) override {
    const Recorded r(inner_, "max_pool2d_backward", "", "pool", {&dx}, {&dy, &indices}, 0);
    inner_.max_pool2d_backward(dx, dy, indices);
  }
  void avg_pool2d(const TensorRef& out, const TensorRef& in, const Window2d& window) override {
    const Recorded r(inner_, "avg_pool2d", "", "pool", {&out}, {&in},
                     elements(out) * static_cast<double>(window.kernel_h * window.kernel_w));
    inner_.avg_pool2d(out, in, window);
  }
  void avg_pool2d_backward(const TensorRef& dx, const TensorRef& dy,
                           const Window2d& window) override {
    const Recorded r(inner_, "avg_pool2d_backward", "", "pool", {&dx}, {&dy},
                     elements(dy) * static_cast<double>(window.kernel_h * window.kernel_w));
    inner_.avg_pool2d_backward(dx, dy, window);
  }
  // Selecting and gathering move values (none); adding them in counts one add per value.
  void index_select(const TensorRef& out, const TensorRef& in, int dim,
                    const TensorRef& index) override {
    const Recorded r(inner_, "index_select", "", "indexing", {&out}, {&in, &index}, 0);
    inner_.index_select(out, in, dim, index);
  }
  void index_add(const TensorRef& out, int dim, const TensorRef& index,
                 const TensorRef& src) override {
    const Recorded r(inner_, "index_add", "", "indexing", {&out}, {&index, &src}, elements(src));
    inner_.index_add(out, dim, index, src);
  }
  void gather(const TensorRef& out, const TensorRef& in, int dim, const TensorRef& index) override {
    const Recorded r(inner_, "gather", "", "indexing", {&out}, {&in, &index}, 0);
    inner_.gather(out, in, dim, index);
  }
  void scatter_add(const TensorRef& out, int dim, const TensorRef& index,
                   const TensorRef& src) override {
    const Recorded r(inner_, "scatter_add", "", "indexing", {&out}, {&index, &src}, elements(src));
    inner_.scatter_add(out, dim, index, src);
  }

 private:
  Backend& inner_;
};

}  // namespace

double distinct_bytes(const TensorRef& view) {
  double count = 1;
  for (std::size_t d = 0; d < view.shape.size(); ++d) {
    if (view.shape[d] == 0) return 0;
    if (view.strides[d] != 0) count *= static_cast<double>(view.shape[d]);
  }
  return count * static_cast<double>(element_size(view.dtype));
}

Backend& profiling_backend(Backend& inner) {
  static std::mutex mutex;
  static auto* twins = new std::map<Backend*, std::unique_ptr<ProfilingBackend>>;
  const std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<ProfilingBackend>& twin = (*twins)[&inner];
  if (!twin) twin = std::make_unique<ProfilingBackend>(inner);
  return *twin;
}

}  // namespace normgrad::backend
