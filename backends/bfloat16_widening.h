#pragma once
// bfloat16 through float32 kernels. A kernel that takes bfloat16 operands without a bfloat16
// kernel of its own gives each of them a float32 working copy: inputs are converted up before
// the kernel runs, outputs rounded back (to nearest, ties to even) after it. float32, float64 and
// int64 operands pass through untouched. The result is exactly the float32 kernel's on the
// rounded inputs, rounded once: what a native kernel that loads bfloat16, computes in float32 and
// stores bfloat16 gives, at the price of the copies' memory traffic.
//
//   Float32Copies copies(backend);
//   backend.avg_pool2d(copies.output(out), copies.input(in), window);  // the float32 kernel
//   copies.finish();                                                    // rounds `out` back
//
// The `widened` functions below do this for each op that takes bfloat16 without a kernel of its
// own: the CPU backend's matrix products, recurrent steps, convolutions, pooling, batch norm
// and accumulating indexing ops. CUDA's kernels
// all take bfloat16 natively (compute_type.h), as do the CPU's elementwise ops, reductions,
// softmax and norms (cpu/bfloat16_rows.h). A backend's method hands over to them when an
// operand is bfloat16:
//
//   if (any_bfloat16({&out, &in})) return widened::max_pool2d(*this, out, indices, in, window);
//
// A copy keeps its operand's shape. Broadcast dims (stride 0) stay broadcast in the copy, which
// holds each distinct value once; every other dim is laid out contiguously. So the float32
// kernel sees the same broadcasting as the original, in contiguous rows.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <initializer_list>

#include "backends/backend.h"

namespace normgrad::backend {

// Whether any of the given operands (null ones skipped) holds bfloat16.
bool any_bfloat16(std::initializer_list<const TensorRef*> operands);

class Float32Copies {
 public:
  explicit Float32Copies(Backend& backend) : backend_(backend) {}
  Float32Copies(const Float32Copies&) = delete;
  Float32Copies& operator=(const Float32Copies&) = delete;
  ~Float32Copies();  // frees the copies; finish() must have run for outputs to be written

  // The operand as the float32 kernel should see it: a float32 copy of a bfloat16 operand,
  // valid while this object lives, or else the operand itself (the caller's reference). The
  // pointer forms pass null through.
  const TensorRef& input(const TensorRef& operand);   // read by the kernel
  const TensorRef& output(const TensorRef& operand);  // written by it
  const TensorRef& update(const TensorRef& operand);  // read and written (accumulation)
  const TensorRef* input(const TensorRef* operand);
  const TensorRef* output(const TensorRef* operand);

  // Rounds every output and update back into its bfloat16 operand.
  void finish();

 private:
  struct Copy {
    TensorRef original;
    TensorRef working;  // float32, broadcast dims kept
    std::size_t bytes = 0;
    bool written = false;
  };
  const TensorRef& add(const TensorRef& operand, bool read, bool written);

  Backend& backend_;
  std::deque<Copy> copies_;  // a deque: the references handed out stay valid as it grows
};

// The backend's float32 kernel of each op, run on float32 copies of the bfloat16 operands.
// Arguments as in backend.h.
namespace widened {
// The accumulating index ops: `out` is summed into in float32 and rounded once at the end.
void index_add(Backend& backend, const TensorRef& out, int dim, const TensorRef& index,
               const TensorRef& src);
void scatter_add(Backend& backend, const TensorRef& out, int dim, const TensorRef& index,
                 const TensorRef& src);
void matmul(Backend& backend, const TensorRef& out, const TensorRef& a, const TensorRef& b,
            bool accumulate);
void gru_cell_forward(Backend& backend, const TensorRef& h, const TensorRef& activations,
                      const TensorRef& gx, const TensorRef& gh, const TensorRef& h_prev,
                      const TensorRef* mask);
void gru_cell_backward(Backend& backend, const TensorRef& dgx, const TensorRef& dgh,
                       const TensorRef& dh_prev, const TensorRef& dh, const TensorRef& activations,
                       const TensorRef& gh, const TensorRef& h_prev, const TensorRef* mask);
void normed_gru_cell_forward(Backend& backend, const GruStateNorms& norms, const TensorRef& h,
                             const TensorRef& activations, const TensorRef& normalised,
                             const TensorRef& statistics, const TensorRef& gx, const TensorRef& gh,
                             const TensorRef& h_prev, const TensorRef* mask);
void normed_gru_cell_backward(Backend& backend, const GruStateNorms& norms, const TensorRef& dgx,
                              const TensorRef& dgh, const TensorRef& dh_prev,
                              const GruStateNormGrads& affine, const TensorRef& dh,
                              const TensorRef& activations, const TensorRef& normalised,
                              const TensorRef& statistics, const TensorRef& gh,
                              const TensorRef& h_prev, const TensorRef* mask);
void lstm_cell_forward(Backend& backend, const TensorRef& c, const TensorRef& activations,
                       const TensorRef& gates, const TensorRef& c_prev, const TensorRef* mask);
void lstm_cell_backward(Backend& backend, const TensorRef& dgates, const TensorRef& dc_prev,
                        const TensorRef& dc, const TensorRef& activations, const TensorRef& c_prev,
                        const TensorRef* mask);
void lstm_step_forward(Backend& backend, const LstmStepNorms& norms, const TensorRef& state,
                       const TensorRef& activations, const TensorRef& cell,
                       const TensorRef& statistics, const TensorRef& gx, const TensorRef& gh,
                       const TensorRef& h_prev, const TensorRef& c_prev, const TensorRef* mask);
void lstm_step_backward(Backend& backend, const LstmStepNorms& norms, const TensorRef& dgx,
                        const TensorRef& dgh, const TensorRef& dh_prev, const TensorRef& dc_prev,
                        const LstmStepNormGrads& affine, const TensorRef& dstate,
                        const TensorRef& state, const TensorRef& activations, const TensorRef& cell,
                        const TensorRef& statistics, const TensorRef& gh, const TensorRef& c_prev,
                        const TensorRef* mask);
// Images: the columns, convolutions, pooling (indices stay int64) and batch norm (mean,
// variance and rstd stay float64).
void im2col(Backend& backend, const TensorRef& columns, const TensorRef& image,
            const Window2d& window);
void col2im(Backend& backend, const TensorRef& image, const TensorRef& columns,
            const Window2d& window);
void conv2d(Backend& backend, const TensorRef& y, const TensorRef& x, const TensorRef& weight,
            const TensorRef* bias, const Window2d& window);
void conv2d_weight_gradient(Backend& backend, const TensorRef& dw, const TensorRef& x,
                            const TensorRef& dy, const Window2d& window);
void max_pool2d(Backend& backend, const TensorRef& out, const TensorRef& indices,
                const TensorRef& in, const Window2d& window);
void max_pool2d_backward(Backend& backend, const TensorRef& dx, const TensorRef& dy,
                         const TensorRef& indices);
void avg_pool2d(Backend& backend, const TensorRef& out, const TensorRef& in,
                const Window2d& window);
void avg_pool2d_backward(Backend& backend, const TensorRef& dx, const TensorRef& dy,
                         const Window2d& window);
void batch_norm_statistics(Backend& backend, const TensorRef& mean, const TensorRef& variance,
                           const TensorRef& rstd, const TensorRef& x, double eps);
void batch_norm_forward(Backend& backend, const TensorRef& y, const TensorRef& x,
                        const TensorRef& mean, const TensorRef& rstd, const TensorRef* gain,
                        const TensorRef* bias);
void batch_norm_backward(Backend& backend, const TensorRef& dx, const TensorRef* dgain,
                         const TensorRef* dbias, const TensorRef& dy, const TensorRef& x,
                         const TensorRef& mean, const TensorRef& rstd, const TensorRef* gain,
                         bool batch_statistics);
}  // namespace widened

}  // namespace normgrad::backend
