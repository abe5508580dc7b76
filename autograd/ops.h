#pragma once
// The differentiable ops, as free functions. Each is defined in functions/ beside its
// backward pass. Binary ops broadcast NumPy-style; both operands must have the same dtype
// and device (convert with .to()). Comparisons return 1/0 in the operands' dtype and, like
// argmax, carry no gradient.

#include <cstdint>
#include <optional>
#include <vector>

#include "core/tensor.h"

namespace normgrad {

// ---- elementwise, two operands ------------------------------------------------------------
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& base, const Tensor& exponent);
Tensor maximum(const Tensor& a, const Tensor& b);  // ties share the gradient equally
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, double b);
Tensor sub(const Tensor& a, double b);
Tensor mul(const Tensor& a, double b);
Tensor div(const Tensor& a, double b);
Tensor pow(const Tensor& base, double exponent);
Tensor rsub(const Tensor& a, double b);  // b - a
Tensor rdiv(const Tensor& a, double b);  // b / a

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);
Tensor operator-(const Tensor& a);

// ---- comparisons and selection (no gradient through the condition) ------------------------
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, double b);
Tensor ne(const Tensor& a, double b);
Tensor lt(const Tensor& a, double b);
Tensor le(const Tensor& a, double b);
Tensor gt(const Tensor& a, double b);
Tensor ge(const Tensor& a, double b);
// condition != 0 ? a : b, broadcast over all three.
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
// x with `value` wherever mask != 0; mask broadcasts to x.
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);

// ---- elementwise, one operand -------------------------------------------------------------
Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor abs(const Tensor& x);  // gradient sign(x): 0 at 0
Tensor square(const Tensor& x);
Tensor sign(const Tensor& x);  // no gradient
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);  // gradient 0 at 0
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
// Exact: x Phi(x), computed as 0.5 x erfc(-x / sqrt 2) so that the far negative tail keeps its
// tiny values (0.5 x (1 + erf(x / sqrt 2)) cancels to 0 below x = -6 in float64).
Tensor gelu(const Tensor& x);
// min where x < min, max where x > max, x elsewhere; NaN stays NaN. The gradient is 1 on the
// closed interval [min, max], exactly at a bound too (a subgradient: torch.clamp with number
// bounds passes it there as well), and 0 outside it and at NaN.
Tensor clamp(const Tensor& x, double min, double max);

// ---- reductions (an empty dims list means all dims) ----------------------------------------
Tensor sum(const Tensor& x, const std::vector<std::int64_t>& dims = {}, bool keepdim = false);
Tensor mean(const Tensor& x, const std::vector<std::int64_t>& dims = {}, bool keepdim = false);
// Population variance by default; unbiased divides by n - 1. Centred two-pass.
Tensor var(const Tensor& x, const std::vector<std::int64_t>& dims = {}, bool keepdim = false,
           bool unbiased = false);
Tensor max(const Tensor& x);  // over all elements
Tensor min(const Tensor& x);
// Along one dim; the gradient goes to the first maximal (minimal) entry.
Tensor max(const Tensor& x, std::int64_t dim, bool keepdim = false);
Tensor min(const Tensor& x, std::int64_t dim, bool keepdim = false);
Tensor argmax(const Tensor& x, std::int64_t dim, bool keepdim = false);  // int64, first on ties
Tensor argmin(const Tensor& x, std::int64_t dim, bool keepdim = false);

// ---- linear algebra -----------------------------------------------------------------------
// NumPy matmul: 1-d operands are promoted to matrices, batch dims broadcast.
Tensor matmul(const Tensor& a, const Tensor& b);
// bias + a @ b for matrices a [m, k] and b [k, n], bias broadcastable to [m, n] (a Linear
// layer's [n]): the product is accumulated onto the broadcast bias, one pass over the output
// where matmul and + make three.
Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b);

// ---- softmax ------------------------------------------------------------------------------
Tensor softmax(const Tensor& x, std::int64_t dim);
Tensor log_softmax(const Tensor& x, std::int64_t dim);

// ---- joining and splitting ----------------------------------------------------------------
Tensor cat(const std::vector<Tensor>& tensors, std::int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, std::int64_t dim = 0);
// Pieces of `size` along dim (the last may be shorter), as views.
std::vector<Tensor> split(const Tensor& x, std::int64_t size, std::int64_t dim = 0);
std::vector<Tensor> split(const Tensor& x, const std::vector<std::int64_t>& sizes,
                          std::int64_t dim = 0);
std::vector<Tensor> chunk(const Tensor& x, std::int64_t chunks, std::int64_t dim = 0);
// The slices x.select(dim, i) for every i, as views. Unlike T separate select() calls, whose
// backward passes each build a zero tensor of x's full size, their gradients land in one
// buffer shaped like x: a time loop over unbind(x, 0) costs O(T), not O(T^2), in backward.
std::vector<Tensor> unbind(const Tensor& x, std::int64_t dim = 0);

// ---- indexing (indices are int64) ---------------------------------------------------------
Tensor index_select(const Tensor& x, std::int64_t dim, const Tensor& index);
Tensor gather(const Tensor& x, std::int64_t dim, const Tensor& index);
// x with src added at the positions `index` names along dim (out of place).
Tensor scatter_add(const Tensor& x, std::int64_t dim, const Tensor& index, const Tensor& src);
// Rows of weight [num_embeddings, dim] picked by indices of any shape; the result has shape
// indices.shape + [dim]. The backward pass adds into the picked rows (an index-add).
Tensor embedding(const Tensor& weight, const Tensor& indices);

// ---- convolution and pooling over [N, C, H, W] images --------------------------------------
// A size for the two spatial dims (rows, columns); one number stands for both.
struct Size2d {
  std::int64_t h, w;
  Size2d(std::int64_t both) : h(both), w(both) {}  // NOLINT: implicit, as in conv2d(x, w, b, 2)
  Size2d(std::int64_t rows, std::int64_t columns) : h(rows), w(columns) {}
};

// Cross-correlation, as in PyTorch: weight [O, C, kh, kw], bias [O] or undefined;
//   y[n, o, oh, ow] = b[o] + sum_{c,i,j} w[o, c, i, j] x[n, c, h, w],
//   h = oh sh - ph + i dh,  w = ow sw - pw + j dw,
// with zeros outside the image. Output size: OH = (H + 2 ph - dh (kh - 1) - 1) / sh + 1.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
              Size2d stride = 1, Size2d padding = 0, Size2d dilation = 1);
// The largest value of each kernel x kernel window; stride defaults to kernel; the padding (at
// most half the kernel) never wins. The gradient goes to one element per window: the first
// maximum in row-major order when several are equal (as in PyTorch). A window holding NaN
// outputs NaN, and its gradient goes to the first NaN (PyTorch's kernels give it to the last).
// The CPU and CUDA kernels follow the same rule.
Tensor max_pool2d(const Tensor& x, Size2d kernel, std::optional<Size2d> stride = std::nullopt,
                  Size2d padding = 0);
// The mean of each window, the padding counted as zeros: every window divides by kh kw
// (PyTorch's default, count_include_pad = true).
Tensor avg_pool2d(const Tensor& x, Size2d kernel, std::optional<Size2d> stride = std::nullopt,
                  Size2d padding = 0);
// The mean over H and W: [N, C, H, W] -> [N, C].
Tensor global_avg_pool2d(const Tensor& x);

}  // namespace normgrad
