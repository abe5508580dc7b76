#include "backends/conv_by_columns.h"

#include <algorithm>
#include <cstdint>

namespace normgrad::backend {

namespace {

// Device memory for the call's columns and products, given back at the end.
class Scratch {
 public:
  Scratch(Backend& backend, std::size_t nbytes)
      : backend_(backend),
        nbytes_(nbytes),
        data_(nbytes > 0 ? backend.allocate(nbytes) : nullptr) {}
  ~Scratch() {
    if (data_ != nullptr) backend_.deallocate(data_, nbytes_);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  void* data() const { return data_; }

 private:
  Backend& backend_;
  std::size_t nbytes_;
  void* data_;
};

TensorRef view(void* data, DType dtype, Shape shape, Strides strides) {
  return TensorRef{data, dtype, std::move(shape), std::move(strides)};
}

void* advanced(void* data, DType dtype, std::int64_t elements) {
  return static_cast<char*>(data) + elements * static_cast<std::int64_t>(element_size(dtype));
}

// Samples [first, first + count) of a contiguous [N, C, H, W] image.
TensorRef images(const TensorRef& x, std::int64_t first, std::int64_t count) {
  const std::int64_t channels = x.shape[1], height = x.shape[2], width = x.shape[3];
  return view(advanced(x.data, x.dtype, first * channels * height * width), x.dtype,
              {count, channels, height, width},
              {channels * height * width, height * width, width, 1});
}

}  // namespace

// A CIFAR layer with 96 channels at 32 x 32 has 0.9 Mi column values per sample: a batch of
// 64 is 8 chunks. Each chunk is a handful of forks and joins of the threads, which on a
// machine shared with other processes cost far more than their work whenever a thread has
// lost its core: with 4 Mi, a ConvPool-CNN-C step under a load of 5 took 15% longer (within
// the noise of the 8 Mi one on a quiet machine), for 31 MB less resident memory.
std::int64_t conv_chunk_samples(std::int64_t taps, std::int64_t positions, std::int64_t batch) {
  constexpr std::int64_t column_budget = std::int64_t{1} << 23;
  return std::clamp<std::int64_t>(column_budget / std::max<std::int64_t>(taps * positions, 1), 1,
                                  std::max<std::int64_t>(batch, 1));
}

void conv2d_by_columns(Backend& backend, const TensorRef& y, const TensorRef& x,
                       const TensorRef& weight, const TensorRef* bias, const Window2d& window) {
  const std::int64_t batch = x.shape[0], channels = x.shape[1];
  const std::int64_t out_channels = y.shape[1], positions = y.shape[2] * y.shape[3];
  const std::int64_t taps = channels * window.kernel_h * window.kernel_w;
  if (y.numel() == 0) return;
  const DType dtype = y.dtype, sums = compute_dtype(dtype);
  const bool widens = sums != dtype;  // bfloat16: float32 products, rounded once into y
  const std::int64_t chunk = conv_chunk_samples(taps, positions, batch);
  Scratch columns(backend,
                  static_cast<std::size_t>(taps * chunk * positions) * element_size(dtype));
  Scratch product(backend,
                  static_cast<std::size_t>(out_channels * chunk * positions) * element_size(sums));
  Scratch wide_bias(backend, bias != nullptr && widens
                                 ? static_cast<std::size_t>(out_channels) * element_size(sums)
                                 : 0);
  if (wide_bias.data() != nullptr)
    backend.copy(view(wide_bias.data(), sums, {out_channels}, {1}), *bias);
  const TensorRef matrix_w = view(weight.data, dtype, {out_channels, taps}, {taps, 1});
  for (std::int64_t first = 0; first < batch; first += chunk) {
    const std::int64_t count = std::min(chunk, batch - first), wide = count * positions;
    // columns [K, m, L], filled through the view [m, K, L]; the product [O, m, L].
    const TensorRef image = images(x, first, count);
    if (taps > 0)
      backend.im2col(view(columns.data(), dtype, {count, taps, positions}, {positions, wide, 1}),
                     image, window);
    const TensorRef matrix_y = view(product.data(), sums, {out_channels, wide}, {wide, 1});
    if (taps > 0)
      backend.matmul(matrix_y, matrix_w, view(columns.data(), dtype, {taps, wide}, {wide, 1}),
                     false);
    else
      backend.fill(matrix_y, 0);
    // y[n] = Y[:, n L ..] (+ b): [m, O, L] from [O, m, L]. With float32 products the bias is
    // added to them in place, and the copy into y rounds once.
    const Shape by_sample{count, out_channels, positions};
    const TensorRef y_chunk = view(advanced(y.data, dtype, first * out_channels * positions), dtype,
                                   by_sample, {out_channels * positions, positions, 1});
    const TensorRef from_product = view(product.data(), sums, by_sample, {positions, wide, 1});
    const TensorRef& sum_into = widens ? from_product : y_chunk;
    if (bias != nullptr) {
      void* bias_data = widens ? wide_bias.data() : bias->data;
      backend.binary(BinaryOp::Add, sum_into, from_product,
                     view(bias_data, sums, by_sample, {0, 1, 0}), 0);
    }
    if (widens || bias == nullptr) backend.copy(y_chunk, from_product);
  }
}

void conv2d_weight_gradient_by_columns(Backend& backend, const TensorRef& dw, const TensorRef& x,
                                       const TensorRef& dy, const Window2d& window) {
  const std::int64_t batch = x.shape[0], out_channels = dw.shape[0];
  const std::int64_t taps = dw.shape[1] * dw.shape[2] * dw.shape[3];
  const std::int64_t positions = dy.shape[2] * dy.shape[3];
  const DType dtype = dw.dtype, sums = compute_dtype(dtype);
  const bool widens = sums != dtype;  // bfloat16: float32 sums over the chunks, rounded once
  const TensorRef matrix_dw = view(dw.data, dtype, {out_channels, taps}, {taps, 1});
  if (dw.numel() == 0) return;
  if (batch == 0 || positions == 0) {
    backend.fill(matrix_dw, 0);
    return;
  }
  const std::int64_t chunk = conv_chunk_samples(taps, positions, batch);
  Scratch columns(backend,
                  static_cast<std::size_t>(taps * chunk * positions) * element_size(dtype));
  Scratch rows(backend,
               static_cast<std::size_t>(out_channels * chunk * positions) * element_size(dtype));
  Scratch wide_dw(backend, widens ? static_cast<std::size_t>(dw.numel()) * element_size(sums) : 0);
  const TensorRef sum_dw =
      widens ? view(wide_dw.data(), sums, {out_channels, taps}, {taps, 1}) : matrix_dw;
  for (std::int64_t first = 0; first < batch; first += chunk) {
    const std::int64_t count = std::min(chunk, batch - first), wide = count * positions;
    backend.im2col(view(columns.data(), dtype, {count, taps, positions}, {positions, wide, 1}),
                   images(x, first, count), window);
    // dY [O, m L]: dy[n] itself for a chunk of one sample, else a copy of the chunk's rows.
    void* dy_chunk = advanced(dy.data, dtype, first * out_channels * positions);
    if (count > 1)
      backend.copy(view(rows.data(), dtype, {count, out_channels, positions}, {positions, wide, 1}),
                   view(dy_chunk, dtype, {count, out_channels, positions},
                        {out_channels * positions, positions, 1}));
    backend.matmul(sum_dw,
                   view(count > 1 ? rows.data() : dy_chunk, dtype, {out_channels, wide}, {wide, 1}),
                   view(columns.data(), dtype, {wide, taps}, {1, wide}), first > 0);
  }
  if (widens) backend.copy(matrix_dw, sum_dw);
}

}  // namespace normgrad::backend
