// A GRU step with its state side's norms (backend.h gives the contract): the two norms of the
// state-side projection, then the step, all inside one backend call.
//
// On the CPU this call is the reference the CUDA kernel is held to, built from the kernels it
// fuses: norm_forward on each block of gh where it lies (strided rows, no copy), then
// gru_cell_forward on the normalised gh; backward, gru_cell_backward into a scratch gradient of
// the normalised gh, then norm_backward on each block. A row of 3H values stays in cache from one
// kernel to the next, and a CPU has no launches to save, so separate passes cost little here;
// what the call spares the op layer is the split of gh, the two norms' outputs and their cat.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backends/bfloat16_widening.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/recurrent_checks.h"
#include "base/dtype.h"

namespace normgrad::backend::cpu {

namespace {

// Columns [first, first + width) of a contiguous [rows, 3H] operand: rows `stride` apart.
TensorRef block_columns(const TensorRef& operand, std::int64_t first, std::int64_t width) {
  const std::int64_t rows = operand.shape[0], stride = operand.shape[1];
  TensorRef view = operand;
  view.data = static_cast<std::byte*>(operand.data) +
              first * static_cast<std::int64_t>(element_size(operand.dtype));
  view.shape = {rows, width};
  view.strides = {stride, 1};
  return view;
}

// Row `index` of the contiguous [4, rows] statistics.
TensorRef statistic_row(const TensorRef& statistics, std::int64_t index) {
  const std::int64_t rows = statistics.shape[1];
  TensorRef view = statistics;
  view.data = static_cast<std::byte*>(statistics.data) +
              index * rows * static_cast<std::int64_t>(element_size(statistics.dtype));
  view.shape = {rows};
  view.strides = {1};
  return view;
}

// Scratch for the gradient of the normalised gh, kept per thread between calls up to
// kept_scratch_bytes (a fresh allocation of this size would be page-faulted in on every step).
constexpr std::size_t kept_scratch_bytes = std::size_t{16} << 20;

void* gradient_scratch(std::size_t bytes, std::vector<double>& fallback) {
  const std::size_t count = (bytes + sizeof(double) - 1) / sizeof(double);
  if (bytes > kept_scratch_bytes) {
    fallback.resize(count);
    return fallback.data();
  }
  thread_local std::vector<double> buffer;
  if (buffer.size() < count) buffer.resize(count);
  return buffer.data();
}

}  // namespace

void CpuBackend::normed_gru_cell_forward(const GruStateNorms& norms, const TensorRef& h,
                                         const TensorRef& activations, const TensorRef& normalised,
                                         const TensorRef& statistics, const TensorRef& gx,
                                         const TensorRef& gh, const TensorRef& h_prev,
                                         const TensorRef* mask) {
  if (any_bfloat16({&h, &gx, &gh, &h_prev})) {
    Float32Copies f(*this);
    normed_gru_cell_forward(f.input(norms), f.output(h), f.output(activations),
                            f.output(normalised), f.output(statistics), f.input(gx), f.input(gh),
                            f.input(h_prev), f.input(mask));
    return f.finish();
  }
  const char* op = "cpu normed_gru_cell_forward";
  const auto [rows, H] = check_normed_gru_forward(op, norms, h, activations, normalised, statistics,
                                                  gx, gh, h_prev, mask);
  if (rows * H == 0) return;
  norm_forward(norms.gates, block_columns(normalised, 0, 2 * H), statistic_row(statistics, 0),
               statistic_row(statistics, 1), block_columns(gh, 0, 2 * H), norms.gates_gain,
               norms.gates_bias);
  norm_forward(norms.candidate, block_columns(normalised, 2 * H, H), statistic_row(statistics, 2),
               statistic_row(statistics, 3), block_columns(gh, 2 * H, H), norms.candidate_gain,
               norms.candidate_bias);
  gru_cell_forward(h, activations, gx, normalised, h_prev, mask);
}

void CpuBackend::normed_gru_cell_backward(const GruStateNorms& norms, const TensorRef& dgx,
                                          const TensorRef& dgh, const TensorRef& dh_prev,
                                          const GruStateNormGrads& affine, const TensorRef& dh,
                                          const TensorRef& activations, const TensorRef& normalised,
                                          const TensorRef& statistics, const TensorRef& gh,
                                          const TensorRef& h_prev, const TensorRef* mask) {
  if (any_bfloat16({&dh, &gh, &h_prev, &dgx})) {
    Float32Copies f(*this);
    normed_gru_cell_backward(f.input(norms), f.output(dgx), f.output(dgh), f.output(dh_prev),
                             f.output(affine), f.input(dh), f.input(activations),
                             f.input(normalised), f.input(statistics), f.input(gh), f.input(h_prev),
                             f.input(mask));
    return f.finish();
  }
  const char* op = "cpu normed_gru_cell_backward";
  const auto [rows, H] =
      check_normed_gru_backward(op, norms, dgx, dgh, dh_prev, affine, dh, activations, normalised,
                                statistics, gh, h_prev, mask);
  std::vector<double> fallback;
  TensorRef dnormalised = dgh;  // the gradient of the normalised gh, in scratch memory
  dnormalised.data =
      gradient_scratch(static_cast<std::size_t>(rows * 3 * H) * element_size(dgh.dtype), fallback);
  gru_cell_backward(dgx, dnormalised, dh_prev, dh, activations, normalised, h_prev, mask);
  norm_backward(norms.gates, block_columns(dgh, 0, 2 * H), affine.gates_gain, affine.gates_bias,
                block_columns(dnormalised, 0, 2 * H), block_columns(gh, 0, 2 * H),
                statistic_row(statistics, 0), statistic_row(statistics, 1), norms.gates_gain);
  norm_backward(norms.candidate, block_columns(dgh, 2 * H, H), affine.candidate_gain,
                affine.candidate_bias, block_columns(dnormalised, 2 * H, H),
                block_columns(gh, 2 * H, H), statistic_row(statistics, 2),
                statistic_row(statistics, 3), norms.candidate_gain);
}

}  // namespace normgrad::backend::cpu
