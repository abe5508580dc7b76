// CudaBackend's methods: each makes its device current and calls the launcher of the same name
// in the op family's file (see cuda_backend.h).

#include "backends/conv_by_columns.h"
#include "backends/cuda/adam.h"
#include "backends/cuda/batch_norm.h"
#include "backends/cuda/cross_entropy.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/device_guard.h"
#include "backends/cuda/elementwise.h"
#include "backends/cuda/im2col.h"
#include "backends/cuda/implicit_conv.h"
#include "backends/cuda/indexing.h"
#include "backends/cuda/lstm_step.h"
#include "backends/cuda/matmul.h"
#include "backends/cuda/norm.h"
#include "backends/cuda/normed_gru_cell.h"
#include "backends/cuda/pool.h"
#include "backends/cuda/random.h"
#include "backends/cuda/recurrent_cells.h"
#include "backends/cuda/reduce.h"
#include "backends/cuda/softmax.h"

namespace normgrad::backend::cuda {

void CudaBackend::fill(const TensorRef& out, double value) {
  DeviceGuard guard(context_.device);
  cuda::fill(context_, out, value);
}

void CudaBackend::arange(const TensorRef& out, double start, double step) {
  DeviceGuard guard(context_.device);
  cuda::arange(context_, out, start, step);
}

void CudaBackend::copy(const TensorRef& dst, const TensorRef& src) {
  DeviceGuard guard(context_.device);
  cuda::copy(context_, dst, src);
}

void CudaBackend::unary(UnaryOp op, const TensorRef& out, const TensorRef& in, double alpha,
                        double beta) {
  DeviceGuard guard(context_.device);
  cuda::unary(context_, op, out, in, alpha, beta);
}

void CudaBackend::binary(BinaryOp op, const TensorRef& out, const TensorRef& a, const TensorRef& b,
                         double alpha) {
  DeviceGuard guard(context_.device);
  cuda::binary(context_, op, out, a, b, alpha);
}

void CudaBackend::where(const TensorRef& out, const TensorRef& cond, const TensorRef& a,
                        const TensorRef& b) {
  DeviceGuard guard(context_.device);
  cuda::where(context_, out, cond, a, b);
}

void CudaBackend::random(const TensorRef& out, RandomKind kind, std::uint64_t seed,
                         std::uint64_t offset, double alpha, double beta) {
  DeviceGuard guard(context_.device);
  cuda::random(context_, out, kind, seed, offset, alpha, beta);
}

void CudaBackend::random_with_counters(const TensorRef& out, RandomKind kind,
                                       const TensorRef& counters, std::uint64_t offset,
                                       double alpha, double beta) {
  DeviceGuard guard(context_.device);
  cuda::random_with_counters(context_, out, kind, counters, offset, alpha, beta);
}

void CudaBackend::reduce(ReduceOp op, const TensorRef& out, const TensorRef& in,
                         std::uint64_t reduced, double scale) {
  DeviceGuard guard(context_.device);
  cuda::reduce(context_, op, out, in, reduced, scale);
}

void CudaBackend::matmul(const TensorRef& out, const TensorRef& a, const TensorRef& b,
                         bool accumulate) {
  DeviceGuard guard(context_.device);
  cuda::matmul(context_, out, a, b, accumulate);
}

void CudaBackend::softmax(const TensorRef& out, const TensorRef& in, int dim, bool log) {
  DeviceGuard guard(context_.device);
  cuda::softmax(context_, out, in, dim, log);
}

void CudaBackend::softmax_backward(const TensorRef& dx, const TensorRef& dy, const TensorRef& y,
                                   int dim, bool log) {
  DeviceGuard guard(context_.device);
  cuda::softmax_backward(context_, dx, dy, y, dim, log);
}

void CudaBackend::norm_forward(const NormParams& params, const TensorRef& y, const TensorRef& mean,
                               const TensorRef& rstd, const TensorRef& x, const TensorRef* gain,
                               const TensorRef* bias) {
  DeviceGuard guard(context_.device);
  cuda::norm_forward(context_, params, y, mean, rstd, x, gain, bias);
}

void CudaBackend::norm_backward(const NormParams& params, const TensorRef& dx,
                                const TensorRef* dgain, const TensorRef* dbias, const TensorRef& dy,
                                const TensorRef& x, const TensorRef& mean, const TensorRef& rstd,
                                const TensorRef* gain) {
  DeviceGuard guard(context_.device);
  cuda::norm_backward(context_, params, dx, dgain, dbias, dy, x, mean, rstd, gain);
}

void CudaBackend::batch_norm_statistics(const TensorRef& mean, const TensorRef& variance,
                                        const TensorRef& rstd, const TensorRef& x, double eps) {
  DeviceGuard guard(context_.device);
  cuda::batch_norm_statistics(context_, mean, variance, rstd, x, eps);
}

void CudaBackend::batch_norm_forward(const TensorRef& y, const TensorRef& x, const TensorRef& mean,
                                     const TensorRef& rstd, const TensorRef* gain,
                                     const TensorRef* bias) {
  DeviceGuard guard(context_.device);
  cuda::batch_norm_forward(context_, y, x, mean, rstd, gain, bias);
}

void CudaBackend::batch_norm_backward(const TensorRef& dx, const TensorRef* dgain,
                                      const TensorRef* dbias, const TensorRef& dy,
                                      const TensorRef& x, const TensorRef& mean,
                                      const TensorRef& rstd, const TensorRef* gain,
                                      bool batch_statistics) {
  DeviceGuard guard(context_.device);
  cuda::batch_norm_backward(context_, dx, dgain, dbias, dy, x, mean, rstd, gain, batch_statistics);
}

void CudaBackend::cross_entropy_forward(const CrossEntropyParams& params, const TensorRef& loss,
                                        const TensorRef& log_normaliser, const TensorRef& logits,
                                        const TensorRef& targets) {
  DeviceGuard guard(context_.device);
  cuda::cross_entropy_forward(context_, params, loss, log_normaliser, logits, targets);
}

void CudaBackend::cross_entropy_backward(const CrossEntropyParams& params, const TensorRef& dlogits,
                                         const TensorRef& dloss, const TensorRef& logits,
                                         const TensorRef& targets,
                                         const TensorRef& log_normaliser) {
  DeviceGuard guard(context_.device);
  cuda::cross_entropy_backward(context_, params, dlogits, dloss, logits, targets, log_normaliser);
}

void CudaBackend::adam_update(const AdamParams& params, const TensorRef& weight,
                              const TensorRef& grad, const TensorRef& exp_avg,
                              const TensorRef& exp_avg_sq) {
  DeviceGuard guard(context_.device);
  cuda::adam_update(context_, params, weight, grad, exp_avg, exp_avg_sq);
}

void CudaBackend::gru_cell_forward(const TensorRef& h, const TensorRef& activations,
                                   const TensorRef& gx, const TensorRef& gh,
                                   const TensorRef& h_prev, const TensorRef* mask) {
  DeviceGuard guard(context_.device);
  cuda::gru_cell_forward(context_, h, activations, gx, gh, h_prev, mask);
}

void CudaBackend::gru_cell_backward(const TensorRef& dgx, const TensorRef& dgh,
                                    const TensorRef& dh_prev, const TensorRef& dh,
                                    const TensorRef& activations, const TensorRef& gh,
                                    const TensorRef& h_prev, const TensorRef* mask) {
  DeviceGuard guard(context_.device);
  cuda::gru_cell_backward(context_, dgx, dgh, dh_prev, dh, activations, gh, h_prev, mask);
}

void CudaBackend::normed_gru_cell_forward(const GruStateNorms& norms, const TensorRef& h,
                                          const TensorRef& activations, const TensorRef& normalised,
                                          const TensorRef& statistics, const TensorRef& gx,
                                          const TensorRef& gh, const TensorRef& h_prev,
                                          const TensorRef* mask) {
  DeviceGuard guard(context_.device);
  cuda::normed_gru_cell_forward(context_, norms, h, activations, normalised, statistics, gx, gh,
                                h_prev, mask);
}

void CudaBackend::normed_gru_cell_backward(const GruStateNorms& norms, const TensorRef& dgx,
                                           const TensorRef& dgh, const TensorRef& dh_prev,
                                           const GruStateNormGrads& affine, const TensorRef& dh,
                                           const TensorRef& activations,
                                           const TensorRef& normalised, const TensorRef& statistics,
                                           const TensorRef& gh, const TensorRef& h_prev,
                                           const TensorRef* mask) {
  DeviceGuard guard(context_.device);
  cuda::normed_gru_cell_backward(context_, norms, dgx, dgh, dh_prev, affine, dh, activations,
                                 normalised, statistics, gh, h_prev, mask);
}

void CudaBackend::lstm_step_forward(const LstmStepNorms& norms, const TensorRef& state,
                                    const TensorRef& activations, const TensorRef& cell,
                                    const TensorRef& statistics, const TensorRef& gx,
                                    const TensorRef& gh, const TensorRef& h_prev,
                                    const TensorRef& c_prev, const TensorRef* mask) {
  DeviceGuard guard(context_.device);
  cuda::lstm_step_forward(context_, norms, state, activations, cell, statistics, gx, gh, h_prev,
                          c_prev, mask);
}

void CudaBackend::lstm_step_backward(const LstmStepNorms& norms, const TensorRef& dgx,
                                     const TensorRef& dgh, const TensorRef& dh_prev,
                                     const TensorRef& dc_prev, const LstmStepNormGrads& affine,
                                     const TensorRef& dstate, const TensorRef& state,
                                     const TensorRef& activations, const TensorRef& cell,
                                     const TensorRef& statistics, const TensorRef& gh,
                                     const TensorRef& c_prev, const TensorRef* mask) {
  DeviceGuard guard(context_.device);
  cuda::lstm_step_backward(context_, norms, dgx, dgh, dh_prev, dc_prev, affine, dstate, state,
                           activations, cell, statistics, gh, c_prev, mask);
}

void CudaBackend::lstm_cell_forward(const TensorRef& c, const TensorRef& activations,
                                    const TensorRef& gates, const TensorRef& c_prev,
                                    const TensorRef* mask) {
  DeviceGuard guard(context_.device);
  cuda::lstm_cell_forward(context_, c, activations, gates, c_prev, mask);
}

void CudaBackend::lstm_cell_backward(const TensorRef& dgates, const TensorRef& dc_prev,
                                     const TensorRef& dc, const TensorRef& activations,
                                     const TensorRef& c_prev, const TensorRef* mask) {
  DeviceGuard guard(context_.device);
  cuda::lstm_cell_backward(context_, dgates, dc_prev, dc, activations, c_prev, mask);
}

void CudaBackend::im2col(const TensorRef& columns, const TensorRef& image, const Window2d& window) {
  DeviceGuard guard(context_.device);
  cuda::im2col(context_, columns, image, window);
}

void CudaBackend::col2im(const TensorRef& image, const TensorRef& columns, const Window2d& window) {
  DeviceGuard guard(context_.device);
  cuda::col2im(context_, image, columns, window);
}

// conv2d and its weight gradient: im2col and cuBLAS GEMMs over chunks of samples, or
// implicit-GEMM kernels when chosen (core/cuda.h's set_conv_algorithm); both take bfloat16
// natively, with float32 sums.
void CudaBackend::conv2d(const TensorRef& y, const TensorRef& x, const TensorRef& weight,
                         const TensorRef* bias, const Window2d& window) {
  DeviceGuard guard(context_.device);
  if (cuda::implicit_gemm_convolutions())
    cuda::conv2d_implicit_gemm(context_, y, x, weight, bias, window);
  else
    conv2d_by_columns(*this, y, x, weight, bias, window);
}

void CudaBackend::conv2d_weight_gradient(const TensorRef& dw, const TensorRef& x,
                                         const TensorRef& dy, const Window2d& window) {
  DeviceGuard guard(context_.device);
  if (cuda::implicit_gemm_convolutions())
    cuda::conv2d_weight_gradient_implicit_gemm(context_, dw, x, dy, window);
  else
    conv2d_weight_gradient_by_columns(*this, dw, x, dy, window);
}

void CudaBackend::max_pool2d(const TensorRef& out, const TensorRef& indices, const TensorRef& in,
                             const Window2d& window) {
  DeviceGuard guard(context_.device);
  cuda::max_pool2d(context_, out, indices, in, window);
}

void CudaBackend::max_pool2d_backward(const TensorRef& dx, const TensorRef& dy,
                                      const TensorRef& indices) {
  DeviceGuard guard(context_.device);
  cuda::max_pool2d_backward(context_, dx, dy, indices);
}

void CudaBackend::avg_pool2d(const TensorRef& out, const TensorRef& in, const Window2d& window) {
  DeviceGuard guard(context_.device);
  cuda::avg_pool2d(context_, out, in, window);
}

void CudaBackend::avg_pool2d_backward(const TensorRef& dx, const TensorRef& dy,
                                      const Window2d& window) {
  DeviceGuard guard(context_.device);
  cuda::avg_pool2d_backward(context_, dx, dy, window);
}

void CudaBackend::index_select(const TensorRef& out, const TensorRef& in, int dim,
                               const TensorRef& index) {
  DeviceGuard guard(context_.device);
  cuda::index_select(context_, out, in, dim, index);
}

void CudaBackend::index_add(const TensorRef& out, int dim, const TensorRef& index,
                            const TensorRef& src) {
  DeviceGuard guard(context_.device);
  cuda::index_add(context_, out, dim, index, src);
}

void CudaBackend::gather(const TensorRef& out, const TensorRef& in, int dim,
                         const TensorRef& index) {
  DeviceGuard guard(context_.device);
  cuda::gather(context_, out, in, dim, index);
}

void CudaBackend::scatter_add(const TensorRef& out, int dim, const TensorRef& index,
                              const TensorRef& src) {
  DeviceGuard guard(context_.device);
  cuda::scatter_add(context_, out, dim, index, src);
}

}  // namespace normgrad::backend::cuda
