// BatchNorm's kernels (backend.h gives the contract). x is contiguous [N, C, S]; channel c
// owns the M = N S values x[n, c, s].
//
// Statistics. The samples are cut into fixed blocks, whose size depends on the shape alone.
// Within a block a channel's values come in pieces small enough to stay in cache, and each
// piece's mean and M2 (sum of squared deviations from its mean) are taken in two passes over
// it, in double: centred, never the cancelling E[x^2] - E[x]^2, yet x is read from memory
// once. Pieces, then blocks, are merged in a fixed order (Chan, Golub & LeVeque):
//   n = n_a + n_b,  d = mean_b - mean_a,  mean = mean_a + d n_b / n,
//   M2 = M2_a + M2_b + d^2 n_a n_b / n,
// so the result does not depend on the thread count. variance = M2 / M (biased).
//
// Two layouts:
//   planes  (S >= plane_min_spatial): a piece is a run of at most piece_values positions of
//           one (sample, channel) map; threads take (block, channel) pairs.
//   columns (smaller S, [N, C] input among them): walking down one channel would use one
//           value per cache line, so rows of C S values are read whole and each of the C S
//           columns keeps its moments in a vector that a vectorisable loop along the row
//           updates; a piece is a chunk of rows. After the block, the S columns of a channel
//           are merged into the channel's moments. Threads take blocks.
//
// Backward. Per channel, sum(dy) and sum(dy (x - mean)), in double, with the same blocks and
// layouts, blocks added in order. dx is then elementwise; with x̂ = (x - mean) rstd,
//   dx = a dy + b (x - mean) + k,  a = g rstd,  and
//   training:   b = -a rstd mean(dy x̂),  k = -a mean(dy),
//   evaluation: b = k = 0,
// the first being g rstd (dy - mean(dy) - x̂ mean(dy x̂)).
//
// The statistics stay in double (mean, variance, rstd are float64 tensors for float32 input
// too). The output loops run in x's type and subtract the mean as a head and a tail, both of
// that type (mean = head + tail to double precision): x - head is exact for x near the mean,
// so a channel whose mean is far larger than its spread keeps its precision.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <vector>

#include "backends/bfloat16_widening.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/row_kernel.h"
#include "backends/cpu/strided_loop.h"
#include "backends/dtype_dispatch.h"
#include "base/error.h"

namespace normgrad::backend::cpu {

namespace {

constexpr std::int64_t max_blocks = 64;           // partial results per channel, at most
constexpr std::int64_t min_block_values = 32768;  // smaller blocks are not worth a thread
constexpr std::int64_t piece_values = 4096;       // stays in cache for its second pass
constexpr std::int64_t plane_min_spatial = 32;    // maps this large use the plane layout

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

struct Geometry {
  std::int64_t batch = 0, channels = 0, spatial = 0;
  std::int64_t block_samples = 1, blocks = 0;
  bool planes = false;

  std::int64_t row() const { return channels * spatial; }
  std::int64_t count() const { return batch * spatial; }  // M
  // Work items of the reductions: (block, channel) pairs, or blocks.
  std::int64_t items() const { return planes ? blocks * channels : blocks; }
  std::int64_t item_cost() const { return block_samples * (planes ? spatial : row()); }
};

Geometry geometry_of(const TensorRef& x) {
  Geometry g;
  g.batch = x.shape[0];
  g.channels = x.shape[1];
  g.spatial = x.shape[2];
  const std::int64_t row = std::max<std::int64_t>(g.row(), 1);
  g.block_samples =
      std::max({ceil_div(g.batch, max_blocks), ceil_div(min_block_values, row), std::int64_t{1}});
  g.blocks = ceil_div(g.batch, g.block_samples);
  g.planes = g.spatial >= plane_min_spatial;
  return g;
}

// ---- statistics -----------------------------------------------------------------------------

struct Moments {
  double count = 0, mean = 0, m2 = 0;
};

void merge(Moments& a, const Moments& b) {
  if (b.count == 0) return;
  const double count = a.count + b.count;
  const double delta = b.mean - a.mean;
  const double weight = b.count / count;
  a.mean += delta * weight;
  a.m2 += b.m2 + delta * delta * (a.count * weight);
  a.count = count;
}

template <typename T> Moments piece_moments(const T* x, std::int64_t count) {
  double sum = 0;
#pragma omp simd reduction(+ : sum)
  for (std::int64_t i = 0; i < count; ++i) sum += static_cast<double>(x[i]);
  const double mean = sum / static_cast<double>(count);
  double m2 = 0;
#pragma omp simd reduction(+ : m2)
  for (std::int64_t i = 0; i < count; ++i) {
    const double deviation = static_cast<double>(x[i]) - mean;
    m2 += deviation * deviation;
  }
  return {static_cast<double>(count), mean, m2};
}

// Planes: the moments of channel c over samples [first, last).
template <typename T>
Moments plane_moments(const Geometry& g, const T* x, std::int64_t c, std::int64_t first,
                      std::int64_t last) {
  Moments moments;
  for (std::int64_t n = first; n < last; ++n) {
    const T* plane = x + (n * g.channels + c) * g.spatial;
    for (std::int64_t p = 0; p < g.spatial; p += piece_values)
      merge(moments, piece_moments(plane + p, std::min(piece_values, g.spatial - p)));
  }
  return moments;
}

// Columns: the moments of every channel over samples [first, last), into out[0..C).
template <typename T>
void column_moments(const Geometry& g, const T* x, std::int64_t first, std::int64_t last,
                    Moments* out) {
  const std::int64_t width = g.row();
  const std::int64_t chunk_rows = std::max<std::int64_t>(1, piece_values / width);
  std::vector<double> mean(width, 0.0), m2(width, 0.0), chunk_mean(width), chunk_m2(width);
  double count = 0;
  for (std::int64_t begin = first; begin < last; begin += chunk_rows) {
    const std::int64_t end = std::min(last, begin + chunk_rows);
    std::fill(chunk_mean.begin(), chunk_mean.end(), 0.0);
    std::fill(chunk_m2.begin(), chunk_m2.end(), 0.0);
    double* cm = chunk_mean.data();
    double* c2 = chunk_m2.data();
    for (std::int64_t r = begin; r < end; ++r) {
      const T* row = x + r * width;
#pragma omp simd
      for (std::int64_t i = 0; i < width; ++i) cm[i] += static_cast<double>(row[i]);
    }
    const double rows = static_cast<double>(end - begin);
#pragma omp simd
    for (std::int64_t i = 0; i < width; ++i) cm[i] /= rows;
    for (std::int64_t r = begin; r < end; ++r) {
      const T* row = x + r * width;
#pragma omp simd
      for (std::int64_t i = 0; i < width; ++i) {
        const double deviation = static_cast<double>(row[i]) - cm[i];
        c2[i] += deviation * deviation;
      }
    }
    // The chunk into the block's column moments: every column has the same counts.
    const double total = count + rows, weight = rows / total, cross = count * weight;
    double* bm = mean.data();
    double* b2 = m2.data();
#pragma omp simd
    for (std::int64_t i = 0; i < width; ++i) {
      const double delta = cm[i] - bm[i];
      bm[i] += delta * weight;
      b2[i] += c2[i] + delta * delta * cross;
    }
    count = total;
  }
  for (std::int64_t c = 0; c < g.channels; ++c) {
    Moments channel;
    for (std::int64_t s = 0; s < g.spatial; ++s)
      merge(channel, {count, mean[c * g.spatial + s], m2[c * g.spatial + s]});
    out[c] = channel;
  }
}

template <typename T>
NORMGRAD_ROW_KERNEL void statistics_range(const Geometry& g, const T* x, Moments* partial,
                                          std::int64_t begin, std::int64_t end) {
  for (std::int64_t item = begin; item < end; ++item) {
    const std::int64_t block = g.planes ? item / g.channels : item;
    const std::int64_t first = block * g.block_samples;
    const std::int64_t last = std::min(g.batch, first + g.block_samples);
    if (g.planes)
      partial[item] = plane_moments(g, x, item % g.channels, first, last);
    else
      column_moments(g, x, first, last, partial + block * g.channels);
  }
}

template <typename T>
void statistics_typed(const Geometry& g, const T* x, double* mean, double* variance, double* rstd,
                      double eps) {
  std::vector<Moments> partial(static_cast<std::size_t>(g.blocks * g.channels));
  parallel_for(g.items(), g.item_cost(), [&](std::int64_t begin, std::int64_t end) {
    statistics_range(g, x, partial.data(), begin, end);
  });
  for (std::int64_t c = 0; c < g.channels; ++c) {
    Moments total;
    for (std::int64_t block = 0; block < g.blocks; ++block)
      merge(total, partial[block * g.channels + c]);
    const double var =
        total.count > 0 ? total.m2 / total.count : std::numeric_limits<double>::quiet_NaN();
    mean[c] = total.mean;
    variance[c] = var;
    rstd[c] = 1.0 / std::sqrt(var + eps);
  }
}

// ---- elementwise: out = a dy + b (x - mean) + k per channel ----------------------------------
// Forward uses it without dy: y = scale (x - mean) + shift.

template <typename T> struct ChannelCoefficients {
  std::vector<T> head, tail, a, b, k;

  ChannelCoefficients(std::int64_t channels, const double* mean)
      : head(channels), tail(channels), a(channels), b(channels), k(channels) {
    for (std::int64_t c = 0; c < channels; ++c) {
      head[c] = static_cast<T>(mean[c]);
      tail[c] = static_cast<T>(mean[c] - static_cast<double>(head[c]));
    }
  }
};

template <typename T, bool with_dy>
NORMGRAD_ROW_KERNEL void channel_affine_range(const Geometry& g, T* out, const T* dy, const T* x,
                                              const ChannelCoefficients<T>& co, std::int64_t begin,
                                              std::int64_t end) {
  const T *head = co.head.data(), *tail = co.tail.data();
  const T *a = co.a.data(), *b = co.b.data(), *k = co.k.data();
  if (g.spatial == 1) {  // items are rows of C values
    const std::int64_t width = g.channels;
    for (std::int64_t row = begin; row < end; ++row) {
      const std::int64_t offset = row * width;
#pragma omp simd
      for (std::int64_t c = 0; c < width; ++c) {
        T value = b[c] * ((x[offset + c] - head[c]) - tail[c]) + k[c];
        if constexpr (with_dy) value += a[c] * dy[offset + c];
        out[offset + c] = value;
      }
    }
    return;
  }
  for (std::int64_t plane = begin; plane < end; ++plane) {  // items are (sample, channel) maps
    const std::int64_t c = plane % g.channels, offset = plane * g.spatial;
    const T ph = head[c], pt = tail[c], pa = a[c], pb = b[c], pk = k[c];
#pragma omp simd
    for (std::int64_t s = offset; s < offset + g.spatial; ++s) {
      T value = pb * ((x[s] - ph) - pt) + pk;
      if constexpr (with_dy) value += pa * dy[s];
      out[s] = value;
    }
  }
}

template <typename T, bool with_dy>
void channel_affine(const Geometry& g, T* out, const T* dy, const T* x,
                    const ChannelCoefficients<T>& co) {
  const bool rows = g.spatial == 1;
  parallel_for(rows ? g.batch : g.batch * g.channels, rows ? g.channels : g.spatial,
               [&](std::int64_t begin, std::int64_t end) {
                 channel_affine_range<T, with_dy>(g, out, dy, x, co, begin, end);
               });
}

// ---- backward sums --------------------------------------------------------------------------

struct GradSums {
  double dy = 0, dy_centred = 0;  // sum dy, sum dy (x - mean)
};

template <typename T>
NORMGRAD_ROW_KERNEL void grad_sums_range(const Geometry& g, const T* dy, const T* x,
                                         const double* mean, GradSums* partial, std::int64_t begin,
                                         std::int64_t end) {
  const std::int64_t width = g.row();
  std::vector<double> column_mean, column_dy, column_dy_centred;
  if (!g.planes) {
    column_mean.resize(width);
    for (std::int64_t i = 0; i < width; ++i) column_mean[i] = mean[i / g.spatial];
    column_dy.resize(width);
    column_dy_centred.resize(width);
  }
  for (std::int64_t item = begin; item < end; ++item) {
    const std::int64_t block = g.planes ? item / g.channels : item;
    const std::int64_t first = block * g.block_samples;
    const std::int64_t last = std::min(g.batch, first + g.block_samples);
    if (g.planes) {
      const std::int64_t c = item % g.channels;
      const double m = mean[c];
      double sum_dy = 0, sum_dy_centred = 0;
      for (std::int64_t n = first; n < last; ++n) {
        const std::int64_t offset = (n * g.channels + c) * g.spatial;
#pragma omp simd reduction(+ : sum_dy, sum_dy_centred)
        for (std::int64_t s = offset; s < offset + g.spatial; ++s) {
          const double grad = static_cast<double>(dy[s]);
          sum_dy += grad;
          sum_dy_centred += grad * (static_cast<double>(x[s]) - m);
        }
      }
      partial[item] = {sum_dy, sum_dy_centred};
      continue;
    }
    double* sd = column_dy.data();
    double* sc = column_dy_centred.data();
    const double* cm = column_mean.data();
    std::fill(sd, sd + width, 0.0);
    std::fill(sc, sc + width, 0.0);
    for (std::int64_t n = first; n < last; ++n) {
      const T* dy_row = dy + n * width;
      const T* x_row = x + n * width;
#pragma omp simd
      for (std::int64_t i = 0; i < width; ++i) {
        const double grad = static_cast<double>(dy_row[i]);
        sd[i] += grad;
        sc[i] += grad * (static_cast<double>(x_row[i]) - cm[i]);
      }
    }
    for (std::int64_t c = 0; c < g.channels; ++c) {
      GradSums sums;
      for (std::int64_t s = c * g.spatial; s < (c + 1) * g.spatial; ++s) {
        sums.dy += sd[s];
        sums.dy_centred += sc[s];
      }
      partial[block * g.channels + c] = sums;
    }
  }
}

template <typename T>
void backward_typed(const Geometry& g, T* dx, T* dgain, T* dbias, const T* dy, const T* x,
                    const double* mean, const double* rstd, const T* gain, bool batch_statistics) {
  std::vector<GradSums> totals(static_cast<std::size_t>(g.channels));
  if (batch_statistics || dgain != nullptr || dbias != nullptr) {
    std::vector<GradSums> partial(static_cast<std::size_t>(g.blocks * g.channels));
    parallel_for(g.items(), g.item_cost(), [&](std::int64_t begin, std::int64_t end) {
      grad_sums_range(g, dy, x, mean, partial.data(), begin, end);
    });
    for (std::int64_t block = 0; block < g.blocks; ++block)
      for (std::int64_t c = 0; c < g.channels; ++c) {
        totals[c].dy += partial[block * g.channels + c].dy;
        totals[c].dy_centred += partial[block * g.channels + c].dy_centred;
      }
  }
  const double count = static_cast<double>(std::max<std::int64_t>(g.count(), 1));
  ChannelCoefficients<T> co(g.channels, mean);
  for (std::int64_t c = 0; c < g.channels; ++c) {
    const double r = rstd[c];
    const double scale = (gain != nullptr ? static_cast<double>(gain[c]) : 1.0) * r;
    const double sum_dy_yhat = totals[c].dy_centred * r;
    if (dgain != nullptr) dgain[c] = static_cast<T>(sum_dy_yhat);
    if (dbias != nullptr) dbias[c] = static_cast<T>(totals[c].dy);
    co.a[c] = static_cast<T>(scale);
    co.b[c] = batch_statistics ? static_cast<T>(-scale * r * sum_dy_yhat / count) : T(0);
    co.k[c] = batch_statistics ? static_cast<T>(-scale * totals[c].dy / count) : T(0);
  }
  channel_affine<T, true>(g, dx, dy, x, co);
}

// The few things the op layer cannot have got wrong without a bug of its own.
void check_operands(const TensorRef& x, std::initializer_list<const TensorRef*> like_x,
                    std::initializer_list<const TensorRef*> per_channel,
                    std::initializer_list<const TensorRef*> statistics, const char* op) {
  NG_CHECK(x.rank() == 3, op, "expects x as [N, C, S], got ", x.shape);
  for (const TensorRef* operand : like_x) {
    NG_CHECK(operand->dtype == x.dtype && operand->shape == x.shape, op, "an operand is ",
             operand->dtype, " ", operand->shape, ", x is ", x.dtype, " ", x.shape);
  }
  const auto check_channels = [&](const TensorRef* operand, DType dtype) {
    if (operand == nullptr) return;
    NG_CHECK(operand->dtype == dtype && operand->numel() == x.shape[1], op,
             "per-channel operands must be ", dtype, " with ", x.shape[1], " values, got ",
             operand->dtype, " ", operand->shape);
  };
  for (const TensorRef* operand : per_channel) check_channels(operand, x.dtype);
  for (const TensorRef* operand : statistics) check_channels(operand, DType::Float64);
}

}  // namespace

void CpuBackend::batch_norm_statistics(const TensorRef& mean, const TensorRef& variance,
                                       const TensorRef& rstd, const TensorRef& x, double eps) {
  if (any_bfloat16({&x})) {
    Float32Copies f(*this);
    batch_norm_statistics(mean, variance, rstd, f.input(x), eps);  // float64 statistics
    return f.finish();
  }
  const char* op = "cpu batch_norm_statistics";
  check_operands(x, {}, {}, {&mean, &variance, &rstd}, op);
  dispatch_floating(x.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    statistics_typed(geometry_of(x), x.ptr<const T>(), mean.ptr<double>(), variance.ptr<double>(),
                     rstd.ptr<double>(), eps);
  });
}

void CpuBackend::batch_norm_forward(const TensorRef& y, const TensorRef& x, const TensorRef& mean,
                                    const TensorRef& rstd, const TensorRef* gain,
                                    const TensorRef* bias) {
  if (any_bfloat16({&y, &x, gain, bias})) {
    Float32Copies f(*this);
    batch_norm_forward(f.output(y), f.input(x), mean, rstd, f.input(gain), f.input(bias));
    return f.finish();
  }
  const char* op = "cpu batch_norm_forward";
  check_operands(x, {&y}, {gain, bias}, {&mean, &rstd}, op);
  dispatch_floating(x.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const Geometry g = geometry_of(x);
    ChannelCoefficients<T> co(g.channels, mean.ptr<const double>());
    for (std::int64_t c = 0; c < g.channels; ++c) {
      const double scale = gain != nullptr ? static_cast<double>(gain->ptr<const T>()[c]) : 1.0;
      co.b[c] = static_cast<T>(scale * rstd.ptr<const double>()[c]);
      co.k[c] = bias != nullptr ? bias->ptr<const T>()[c] : T(0);
    }
    channel_affine<T, false>(g, y.ptr<T>(), nullptr, x.ptr<const T>(), co);
  });
}

void CpuBackend::batch_norm_backward(const TensorRef& dx, const TensorRef* dgain,
                                     const TensorRef* dbias, const TensorRef& dy,
                                     const TensorRef& x, const TensorRef& mean,
                                     const TensorRef& rstd, const TensorRef* gain,
                                     bool batch_statistics) {
  if (any_bfloat16({&dx, &dy, &x, gain})) {
    Float32Copies f(*this);
    batch_norm_backward(f.output(dx), f.output(dgain), f.output(dbias), f.input(dy), f.input(x),
                        mean, rstd, f.input(gain), batch_statistics);
    return f.finish();
  }
  const char* op = "cpu batch_norm_backward";
  check_operands(x, {&dx, &dy}, {gain, dgain, dbias}, {&mean, &rstd}, op);
  dispatch_floating(x.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto data = [](const TensorRef* ref) { return ref != nullptr ? ref->ptr<T>() : nullptr; };
    backward_typed(geometry_of(x), dx.ptr<T>(), data(dgain), data(dbias), dy.ptr<const T>(),
                   x.ptr<const T>(), mean.ptr<const double>(), rstd.ptr<const double>(),
                   gain != nullptr ? gain->ptr<const T>() : nullptr, batch_statistics);
  });
}

}  // namespace normgrad::backend::cpu
