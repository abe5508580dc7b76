// Filling, copying and elementwise ops: fill, arange, the strided copy with dtype conversion,
// unary and binary ops, and where.
//
// Each output element is a function of the input elements at the same position, so no thread
// reads what another writes and no result depends on how the work is split over threads.
// One engine, map(), runs every op. It first simplifies the operands' layouts together
// (make_indexers in launch.cuh: size-1 dims dropped, dims that are contiguous with the next in
// every operand merged) and then picks one of three kernels:
//   vector:  every operand contiguous and aligned: each thread moves 4 elements per load and
//            store (one 16-byte access for float32), fewer and wider memory transactions;
//   flat:    one dim left: element i of operand k lies at i * stride_k (stride 0 is a
//            broadcast scalar), so no division is needed;
//   strided: several dims left: the linear index is split into coordinates once per element
//            (in 32-bit arithmetic when there are fewer than 2^31 elements: a 64-bit division is
//            several times dearer) and every operand's offset is their dot product with its
//            strides.
// All three are grid-stride loops: a grid of a few waves of blocks walks any number of
// elements. A copy from a transposed view into a contiguous tensor goes through 32 x 32 tiles
// in shared memory instead, so that both its reads and its writes are coalesced.
//
// The arithmetic is the CPU backend's (backends/cpu/elementwise_math.h): int64 wraps around,
// maximum and minimum propagate NaN, GELU is the exact erf form, and ops outside the integers
// refuse int64. bfloat16 runs in the same kernels: each value is widened to float32 as it is
// loaded and the result rounded once as it is stored (backends/compute_type.h), so the result
// is the float32 op's on the rounded inputs, rounded once, with no float32 copies in memory.

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "backends/compute_type.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/device_guard.h"
#include "backends/cuda/launch.cuh"
#include "backends/dtype_dispatch.h"
#include "backends/op_names.h"

namespace normgrad::backend::cuda {

namespace {

// ---- scalar math, as on the CPU ---------------------------------------------------------------

template <typename T> __device__ __forceinline__ T add_values(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
  else
    return a + b;
}

template <typename T> __device__ __forceinline__ T subtract_values(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b));
  else
    return a - b;
}

template <typename T> __device__ __forceinline__ T multiply_values(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(b));
  else
    return a * b;
}

template <typename T> __device__ __forceinline__ T negate_value(T x) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(std::uint64_t{0} - static_cast<std::uint64_t>(x));
  else
    return -x;
}

// max(a, b) and min(a, b), NaN when either is NaN (x != x only for NaN).
template <typename T> __device__ __forceinline__ T maximum_value(T a, T b) {
  return (a > b || a != a) ? a : b;
}
template <typename T> __device__ __forceinline__ T minimum_value(T a, T b) {
  return (a < b || a != a) ? a : b;
}

// The float32 or float64 function of the C library, picked by T.
template <typename T> __device__ __forceinline__ T math_exp(T x) {
  if constexpr (sizeof(T) == 4)
    return expf(x);
  else
    return ::exp(x);
}
template <typename T> __device__ __forceinline__ T math_log(T x) {
  if constexpr (sizeof(T) == 4)
    return logf(x);
  else
    return ::log(x);
}
template <typename T> __device__ __forceinline__ T math_sqrt(T x) {
  if constexpr (sizeof(T) == 4)
    return sqrtf(x);
  else
    return ::sqrt(x);
}
template <typename T> __device__ __forceinline__ T math_tanh(T x) {
  if constexpr (sizeof(T) == 4)
    return tanhf(x);
  else
    return ::tanh(x);
}
template <typename T> __device__ __forceinline__ T math_erfc(T x) {
  if constexpr (sizeof(T) == 4)
    return erfcf(x);
  else
    return ::erfc(x);
}
template <typename T> __device__ __forceinline__ T math_pow(T x, T y) {
  if constexpr (sizeof(T) == 4)
    return powf(x, y);
  else
    return ::pow(x, y);
}
template <typename T> __device__ __forceinline__ T math_abs(T x) {
  if constexpr (std::is_integral_v<T>)
    return x < 0 ? negate_value(x) : x;
  else if constexpr (sizeof(T) == 4)
    return fabsf(x);
  else
    return ::fabs(x);
}

// sigmoid(x) = 1 / (1 + e^-x); below -(max_exponent - 1) ln 2, where e^-x would overflow and
// 1 + e^x rounds to 1, it is e^x.
template <typename T> __device__ __forceinline__ T sigmoid_value(T x) {
  constexpr T exp_limit = -static_cast<T>(std::numeric_limits<T>::max_exponent - 1) *
                          static_cast<T>(0.6931471805599453);
  if (x < exp_limit) return math_exp(x);
  return T{1} / (T{1} + math_exp(-x));
}

// gelu(x) = x Phi(x) = 0.5 x erfc(-x / sqrt 2); gelu'(x) = Phi(x) + x phi(x). erfc rather
// than 1 + erf, which cancels to 0 in the far negative tail.
template <typename T> __device__ __forceinline__ T gelu_value(T x) {
  constexpr T inverse_sqrt2 = static_cast<T>(0.70710678118654752440);
  return static_cast<T>(0.5) * x * math_erfc(-x * inverse_sqrt2);
}
template <typename T> __device__ __forceinline__ T gelu_derivative(T x) {
  constexpr T inverse_sqrt2 = static_cast<T>(0.70710678118654752440);
  constexpr T inverse_sqrt_2pi = static_cast<T>(0.39894228040143267794);
  const T cdf = static_cast<T>(0.5) * math_erfc(-x * inverse_sqrt2);
  return cdf + x * inverse_sqrt_2pi * math_exp(static_cast<T>(-0.5) * x * x);
}

// Leaky ReLU's slope: 1 where x > 0, alpha elsewhere (NaN included).
template <typename T> __device__ __forceinline__ T leaky_relu_slope(T x, T alpha) {
  return x > T{0} ? T{1} : alpha;
}

// ---- the functions of each op -----------------------------------------------------------------

// out = f(x) for one UnaryOp; alpha and beta are the op's scalars (backend.h). The float-only
// branches are instantiated for float32 and float64 alone (the method sees to that).
template <UnaryOp op, typename T> struct UnaryFunction {
  T alpha, beta;
  __device__ __forceinline__ T operator()(T x) const {
    if constexpr (op == UnaryOp::Neg)
      return negate_value(x);
    else if constexpr (op == UnaryOp::Abs)
      return math_abs(x);
    else if constexpr (op == UnaryOp::Sign)
      return x != x ? x : static_cast<T>((T{0} < x) - (x < T{0}));  // NaN stays NaN
    else if constexpr (op == UnaryOp::Square)
      return multiply_values(x, x);
    else if constexpr (op == UnaryOp::Relu)
      return x < T{0} ? T{0} : x;
    else if constexpr (op == UnaryOp::Clamp)
      return x < alpha ? alpha : (x > beta ? beta : x);
    else if constexpr (op == UnaryOp::AddScalar)
      return add_values(x, alpha);
    else if constexpr (op == UnaryOp::MulScalar)
      return multiply_values(x, alpha);
    else if constexpr (op == UnaryOp::RsubScalar)
      return subtract_values(alpha, x);
    else if constexpr (op == UnaryOp::Exp)
      return math_exp(x);
    else if constexpr (op == UnaryOp::Log)
      return math_log(x);
    else if constexpr (op == UnaryOp::Sqrt)
      return math_sqrt(x);
    else if constexpr (op == UnaryOp::Rsqrt)
      return T{1} / math_sqrt(x);  // rounded, unlike rsqrt()
    else if constexpr (op == UnaryOp::Tanh)
      return math_tanh(x);
    else if constexpr (op == UnaryOp::Sigmoid)
      return sigmoid_value(x);
    else if constexpr (op == UnaryOp::Gelu)
      return gelu_value(x);
    else if constexpr (op == UnaryOp::LeakyRelu)
      return x * leaky_relu_slope(x, alpha);
    else if constexpr (op == UnaryOp::PowScalar)
      return math_pow(x, alpha);
    else if constexpr (op == UnaryOp::RdivScalar)
      return alpha / x;
    else
      static_assert(sizeof(T) == 0, "an op without a function");
  }
};

// out = f(a, b) for the arithmetic BinaryOps (a, b and out of one dtype).
template <BinaryOp op, typename T> struct BinaryFunction {
  T alpha;
  __device__ __forceinline__ T operator()(T a, T b) const {
    if constexpr (op == BinaryOp::Add)
      return add_values(a, b);
    else if constexpr (op == BinaryOp::Sub)
      return subtract_values(a, b);
    else if constexpr (op == BinaryOp::Mul)
      return multiply_values(a, b);
    else if constexpr (op == BinaryOp::Maximum)
      return maximum_value(a, b);
    else if constexpr (op == BinaryOp::Minimum)
      return minimum_value(a, b);
    else if constexpr (op == BinaryOp::Div)
      return a / b;
    else if constexpr (op == BinaryOp::Pow)
      return math_pow(a, b);
    // a = dy, b = y: dy (1 - y^2)
    else if constexpr (op == BinaryOp::TanhGrad)
      return a * (T{1} - b * b);
    // a = dy, b = y: dy y (1 - y)
    else if constexpr (op == BinaryOp::SigmoidGrad)
      return a * b * (T{1} - b);
    // a = dy, b = x
    else if constexpr (op == BinaryOp::ReluGrad)
      return b > T{0} ? a : T{0};
    else if constexpr (op == BinaryOp::GeluGrad)
      return a * gelu_derivative(b);
    else if constexpr (op == BinaryOp::LeakyReluGrad)
      return a * leaky_relu_slope(b, alpha);
    else
      static_assert(sizeof(T) == 0, "an op without a function");
  }
};

// A function of T = compute_t<S> values applied to stored S values: each is widened on load and
// the result rounded once on store. For every S but bfloat16 it is the function itself.
template <typename S, typename Function> struct OnStored {
  Function function;
  template <typename... Stored> __device__ __forceinline__ S operator()(Stored... x) const {
    return static_cast<S>(function(static_cast<compute_t<S>>(x)...));
  }
};

// 1 where the comparison holds, 0 elsewhere, in the output's dtype.
template <BinaryOp op, typename Out, typename In> struct Comparison {
  __device__ __forceinline__ Out operator()(In stored_a, In stored_b) const {
    const auto a = static_cast<compute_t<In>>(stored_a), b = static_cast<compute_t<In>>(stored_b);
    bool result = false;
    if constexpr (op == BinaryOp::Eq)
      result = a == b;
    else if constexpr (op == BinaryOp::Ne)
      result = a != b;
    else if constexpr (op == BinaryOp::Lt)
      result = a < b;
    else if constexpr (op == BinaryOp::Le)
      result = a <= b;
    else if constexpr (op == BinaryOp::Gt)
      result = a > b;
    else if constexpr (op == BinaryOp::Ge)
      result = a >= b;
    else
      static_assert(sizeof(In) == 0, "not a comparison");
    return static_cast<Out>(result ? 1 : 0);
  }
};

template <typename Dst, typename Src> struct Convert {
  __device__ __forceinline__ Dst operator()(Src x) const { return static_cast<Dst>(x); }
};

template <typename T> struct Constant {
  T value;
  __device__ __forceinline__ T operator()() const { return value; }
};

// The chosen value is moved, not converted: a bfloat16 keeps its bits.
template <typename T, typename C> struct Select {
  __device__ __forceinline__ T operator()(C cond, T a, T b) const {
    return static_cast<compute_t<C>>(cond) != compute_t<C>{0} ? a : b;
  }
};

// ---- the map engine -------------------------------------------------------------------------

constexpr int vector_width = 4;

// Four consecutive elements, aligned so that they load and store as one vector access
// (16 bytes for float32; two for float64 and int64).
template <typename T> struct alignas(vector_width * sizeof(T)) Vector { T values[vector_width]; };

template <typename T> __device__ __forceinline__ Vector<T> load_vector(const T* data) {
  return *reinterpret_cast<const Vector<T>*>(data);
}

template <typename Function, typename Out, typename... Vectors>
__device__ __forceinline__ void apply_vector(Out* out, Function function, Vectors... inputs) {
  Vector<Out> result;
#pragma unroll
  for (int k = 0; k < vector_width; ++k) result.values[k] = function(inputs.values[k]...);
  *reinterpret_cast<Vector<Out>*>(out) = result;
}

// All operands contiguous and aligned to a whole Vector: n / 4 vectors, then the last n % 4
// elements one by one.
template <typename Function, typename Out, typename... In>
__global__ void map_vector_kernel(Function function, std::int64_t n, Out* out, const In*... in) {
  const std::int64_t vectors = n / vector_width;
  NG_KERNEL_LOOP(v, vectors) {
    const std::int64_t first = v * vector_width;
    apply_vector(out + first, function, load_vector(in + first)...);
  }
  const std::int64_t tail =
      vectors * vector_width + blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x;
  if (tail < n) out[tail] = function(in[tail]...);
}

// One dim: element i of each operand at i * its stride.
template <typename T> struct Flat {
  T* data;
  std::int64_t stride;
};

template <typename Function, typename Out, typename... In>
__global__ void map_flat_kernel(Function function, std::int64_t n, Flat<Out> out,
                                Flat<const In>... in) {
  NG_KERNEL_LOOP(i, n) out.data[i * out.stride] = function(in.data[i * in.stride]...);
}

// Several dims, innermost first (the reverse of Indexer's order), so that the loop below runs
// over a compile-time range and its arrays stay in registers.
template <int N> struct Layout {
  int rank = 0;
  std::int64_t sizes[max_rank] = {};
  std::int64_t strides[max_rank][N] = {};
};

// The offsets of the element at row-major index `linear` in each of the N operands.
template <int N>
__device__ __forceinline__ void offsets_at(const Layout<N>& layout, std::int64_t linear,
                                           bool narrow, std::int64_t (&offsets)[N]) {
#pragma unroll
  for (int k = 0; k < N; ++k) offsets[k] = 0;
#pragma unroll
  for (int d = 0; d < max_rank; ++d) {
    if (d >= layout.rank) break;
    std::int64_t coordinate;
    if (narrow) {  // every size and index below 2^31
      const auto index = static_cast<std::uint32_t>(linear);
      const auto size = static_cast<std::uint32_t>(layout.sizes[d]);
      coordinate = index % size;
      linear = index / size;
    } else {
      coordinate = linear % layout.sizes[d];
      linear /= layout.sizes[d];
    }
#pragma unroll
    for (int k = 0; k < N; ++k) offsets[k] += coordinate * layout.strides[d][k];
  }
}

template <typename Function, typename Out, typename... In, std::size_t... K>
__device__ __forceinline__ void apply_at(Function function, const std::int64_t* offsets,
                                         std::index_sequence<K...>, Out* out, const In*... in) {
  out[offsets[0]] = function(in[offsets[K + 1]]...);
}

template <typename Function, typename Out, typename... In>
__global__ void map_strided_kernel(Function function, std::int64_t n, bool narrow,
                                   Layout<1 + sizeof...(In)> layout, Out* out, const In*... in) {
  constexpr int N = 1 + sizeof...(In);
  NG_KERNEL_LOOP(i, n) {
    std::int64_t offsets[N];
    offsets_at(layout, i, narrow, offsets);
    apply_at(function, offsets, std::make_index_sequence<N - 1>{}, out, in...);
  }
}

template <typename T> bool is_aligned_to_vector(const void* data) {
  return reinterpret_cast<std::uintptr_t>(data) % sizeof(Vector<T>) == 0;
}

// out = function(in...) elementwise over operands[0] = out and operands[K + 1] = the inputs,
// which all have out's shape (stride 0 where broadcast).
template <typename Out, typename... In, typename Function, std::size_t... K>
void map_operands(const Context& context, const char* op, Function function,
                  const TensorRef* const (&operands)[1 + sizeof...(In)],
                  std::index_sequence<K...>) {
  constexpr int N = 1 + sizeof...(In);
  const std::int64_t n = operands[0]->numel();
  if (n == 0) return;
  Indexer indexers[N];
  make_indexers(operands, indexers, op);
  const int rank = indexers[0].rank;
  Out* out = static_cast<Out*>(operands[0]->data);
  const cudaStream_t stream = context.stream;
  if (rank <= 1) {
    // Rank 0 is a single element; its strides never matter.
    const auto stride = [&](int k) { return rank == 0 ? std::int64_t{0} : indexers[k].strides[0]; };
    bool contiguous = rank == 1;
    for (int k = 0; k < N; ++k) contiguous = contiguous && stride(k) == 1;
    const bool aligned =
        is_aligned_to_vector<Out>(out) && (is_aligned_to_vector<In>(operands[K + 1]->data) && ...);
    if (contiguous && aligned) {
      map_vector_kernel<<<grid_for(std::max<std::int64_t>(n / vector_width, 1), context),
                          threads_per_block, 0, stream>>>(
          function, n, out, static_cast<const In*>(operands[K + 1]->data)...);
    } else {
      map_flat_kernel<<<grid_for(n, context), threads_per_block, 0, stream>>>(
          function, n, Flat<Out>{out, stride(0)},
          Flat<const In>{static_cast<const In*>(operands[K + 1]->data), stride(K + 1)}...);
    }
    NG_CUDA_CHECK_LAUNCH();
    return;
  }
  Layout<N> layout;
  layout.rank = rank;
  for (int d = 0; d < rank; ++d) {
    layout.sizes[d] = indexers[0].sizes[rank - 1 - d];
    for (int k = 0; k < N; ++k) layout.strides[d][k] = indexers[k].strides[rank - 1 - d];
  }
  const bool narrow = n <= std::numeric_limits<std::int32_t>::max();
  map_strided_kernel<<<grid_for(n, context), threads_per_block, 0, stream>>>(
      function, n, narrow, layout, out, static_cast<const In*>(operands[K + 1]->data)...);
  NG_CUDA_CHECK_LAUNCH();
}

template <typename Out, typename... In, typename Function, typename... Refs>
void map(const Context& context, const char* op, Function function, const TensorRef& out,
         const Refs&... in) {
  static_assert(sizeof...(Refs) == sizeof...(In), "one TensorRef per input type");
  const TensorRef* const operands[1 + sizeof...(In)] = {&out, &in...};
  map_operands<Out, In...>(context, op, function, operands, std::index_sequence_for<In...>{});
}

// ---- copies from transposed views -----------------------------------------------------------

constexpr int tile = 32;
constexpr int tile_rows = 8;  // a block of 32 x 8 threads moves a 32 x 32 tile

// dst[b][r][c] = src[b][r][c] over a [batches, rows, cols] iteration where dst is contiguous
// along c and src along r. A tile is read with consecutive threads on consecutive rows (src's
// unit stride), kept in shared memory, and written with consecutive threads on consecutive
// columns (dst's unit stride). The extra column of padding puts the 32 values a warp reads
// down one tile column in 32 different shared-memory banks.
template <typename Dst, typename Src>
__global__ void copy_tiles_kernel(Dst* dst, const Src* src, Indexer dst_batch, Indexer src_batch,
                                  std::int64_t batches, std::int64_t rows, std::int64_t cols,
                                  std::int64_t dst_row_stride, std::int64_t src_col_stride) {
  __shared__ Src values[tile][tile + 1];
  const std::int64_t col_tiles = (cols + tile - 1) / tile;
  const std::int64_t tiles = (rows + tile - 1) / tile * col_tiles;
  // The loop bound is the same for every thread of a block, so all reach each __syncthreads.
  for (std::int64_t t = blockIdx.x; t < batches * tiles; t += gridDim.x) {
    const std::int64_t batch = t / tiles, within = t % tiles;
    const std::int64_t row0 = within / col_tiles * tile, col0 = within % col_tiles * tile;
    const Src* in = src + src_batch.offset(batch);
    Dst* out = dst + dst_batch.offset(batch);
    for (int c = threadIdx.y; c < tile; c += tile_rows) {
      const std::int64_t row = row0 + threadIdx.x, col = col0 + c;
      if (row < rows && col < cols) values[threadIdx.x][c] = in[row + col * src_col_stride];
    }
    __syncthreads();
    for (int r = threadIdx.y; r < tile; r += tile_rows) {
      const std::int64_t row = row0 + r, col = col0 + threadIdx.x;
      if (row < rows && col < cols)
        out[row * dst_row_stride + col] = static_cast<Dst>(values[r][threadIdx.x]);
    }
    __syncthreads();  // the tile is read before the next iteration overwrites it
  }
}

// Runs the tiled copy when the simplified layout has the transposed form (dst's innermost
// stride 1, src's stride 1 along the dim before it, both dims at least a tile long); returns
// false otherwise.
template <typename Dst, typename Src>
bool copy_in_tiles(const Context& context, const TensorRef& dst, const TensorRef& src) {
  const TensorRef* const operands[2] = {&dst, &src};
  Indexer indexers[2];
  make_indexers(operands, indexers, "cuda copy");
  const int rank = indexers[0].rank;
  if (rank < 2) return false;
  const Indexer &to = indexers[0], &from = indexers[1];
  const std::int64_t rows = to.sizes[rank - 2], cols = to.sizes[rank - 1];
  if (to.strides[rank - 1] != 1 || from.strides[rank - 2] != 1 || from.strides[rank - 1] == 1 ||
      rows < tile || cols < tile)
    return false;
  Indexer dst_batch, src_batch;  // the dims before the tiled two
  dst_batch.rank = src_batch.rank = rank - 2;
  std::int64_t batches = 1;
  for (int d = 0; d < rank - 2; ++d) {
    dst_batch.sizes[d] = src_batch.sizes[d] = to.sizes[d];
    dst_batch.strides[d] = to.strides[d];
    src_batch.strides[d] = from.strides[d];
    batches *= to.sizes[d];
  }
  const std::int64_t tiles = batches * ((rows + tile - 1) / tile) * ((cols + tile - 1) / tile);
  copy_tiles_kernel<<<grid_for(tiles * tile * tile_rows, context, tile * tile_rows),
                      dim3(tile, tile_rows), 0, context.stream>>>(
      dst.ptr<Dst>(), src.ptr<const Src>(), dst_batch, src_batch, batches, rows, cols,
      to.strides[rank - 2], from.strides[rank - 1]);
  NG_CUDA_CHECK_LAUNCH();
  return true;
}

template <typename Dst, typename Src>
void copy_typed(const Context& context, const TensorRef& dst, const TensorRef& src) {
  const std::int64_t n = dst.numel();
  if (n == 0) return;
  if (std::is_same_v<Dst, Src> && is_contiguous(dst) && is_contiguous(src)) {
    NG_CUDA_CHECK(cudaMemcpyAsync(dst.data, src.data, n * sizeof(Dst), cudaMemcpyDeviceToDevice,
                                  context.stream));
    return;
  }
  if (copy_in_tiles<Dst, Src>(context, dst, src)) return;
  map<Dst, Src>(context, "cuda copy", Convert<Dst, Src>{}, dst, src);
}

// ---- arange ---------------------------------------------------------------------------------

// out[i] = start + i step in double, rounded once to T. The product and the sum are rounded
// separately (no fused multiply-add), as on the CPU, so the values match it bit for bit.
template <typename T>
__global__ void arange_kernel(T* out, Indexer indexer, std::int64_t n, double start, double step) {
  NG_KERNEL_LOOP(i, n) {
    out[indexer.offset(i)] =
        static_cast<T>(__dadd_rn(start, __dmul_rn(static_cast<double>(i), step)));
  }
}

// ---- unary and binary ops -------------------------------------------------------------------

// S is the stored type, T = compute_t<S> the one the function works in (float32 for bfloat16).
template <UnaryOp op, typename S, typename T = compute_t<S>>
void run_unary(const Context& context, const TensorRef& out, const TensorRef& in, T alpha, T beta) {
  map<S, S>(context, "cuda unary", OnStored<S, UnaryFunction<op, T>>{{alpha, beta}}, out, in);
}

// Ops defined for every dtype; false for the others.
template <typename S, typename T = compute_t<S>>
bool unary_any_dtype(const Context& context, UnaryOp op, const TensorRef& out, const TensorRef& in,
                     T alpha, T beta) {
  switch (op) {
    case UnaryOp::Neg:
      run_unary<UnaryOp::Neg, S>(context, out, in, alpha, beta);
      return true;
    case UnaryOp::Abs:
      run_unary<UnaryOp::Abs, S>(context, out, in, alpha, beta);
      return true;
    case UnaryOp::Sign:
      run_unary<UnaryOp::Sign, S>(context, out, in, alpha, beta);
      return true;
    case UnaryOp::Square:
      run_unary<UnaryOp::Square, S>(context, out, in, alpha, beta);
      return true;
    case UnaryOp::Relu:
      run_unary<UnaryOp::Relu, S>(context, out, in, alpha, beta);
      return true;
    case UnaryOp::Clamp:
      run_unary<UnaryOp::Clamp, S>(context, out, in, alpha, beta);
      return true;
    case UnaryOp::AddScalar:
      run_unary<UnaryOp::AddScalar, S>(context, out, in, alpha, beta);
      return true;
    case UnaryOp::MulScalar:
      run_unary<UnaryOp::MulScalar, S>(context, out, in, alpha, beta);
      return true;
    case UnaryOp::RsubScalar:
      run_unary<UnaryOp::RsubScalar, S>(context, out, in, alpha, beta);
      return true;
    default:
      return false;
  }
}

// Ops that need a floating-point type.
template <typename S, typename T = compute_t<S>>
void unary_floating(const Context& context, UnaryOp op, const TensorRef& out, const TensorRef& in,
                    T alpha, T beta) {
  switch (op) {
    case UnaryOp::Exp:
      return run_unary<UnaryOp::Exp, S>(context, out, in, alpha, beta);
    case UnaryOp::Log:
      return run_unary<UnaryOp::Log, S>(context, out, in, alpha, beta);
    case UnaryOp::Sqrt:
      return run_unary<UnaryOp::Sqrt, S>(context, out, in, alpha, beta);
    case UnaryOp::Rsqrt:
      return run_unary<UnaryOp::Rsqrt, S>(context, out, in, alpha, beta);
    case UnaryOp::Tanh:
      return run_unary<UnaryOp::Tanh, S>(context, out, in, alpha, beta);
    case UnaryOp::Sigmoid:
      return run_unary<UnaryOp::Sigmoid, S>(context, out, in, alpha, beta);
    case UnaryOp::Gelu:
      return run_unary<UnaryOp::Gelu, S>(context, out, in, alpha, beta);
    case UnaryOp::LeakyRelu:
      return run_unary<UnaryOp::LeakyRelu, S>(context, out, in, alpha, beta);
    case UnaryOp::PowScalar:
      if (alpha == T{2}) return run_unary<UnaryOp::Square, S>(context, out, in, alpha, beta);
      return run_unary<UnaryOp::PowScalar, S>(context, out, in, alpha, beta);
    case UnaryOp::RdivScalar:
      return run_unary<UnaryOp::RdivScalar, S>(context, out, in, alpha, beta);
    default:
      break;
  }
  throw Error(detail::concat("cuda unary: unknown op ", static_cast<int>(op)));
}

bool is_comparison(BinaryOp op) {
  return op == BinaryOp::Eq || op == BinaryOp::Ne || op == BinaryOp::Lt || op == BinaryOp::Le ||
         op == BinaryOp::Gt || op == BinaryOp::Ge;
}

template <typename Out, typename In>
void comparison(const Context& context, BinaryOp op, const TensorRef& out, const TensorRef& a,
                const TensorRef& b) {
  const char* name = "cuda binary";
  switch (op) {
    case BinaryOp::Eq:
      return map<Out, In, In>(context, name, Comparison<BinaryOp::Eq, Out, In>{}, out, a, b);
    case BinaryOp::Ne:
      return map<Out, In, In>(context, name, Comparison<BinaryOp::Ne, Out, In>{}, out, a, b);
    case BinaryOp::Lt:
      return map<Out, In, In>(context, name, Comparison<BinaryOp::Lt, Out, In>{}, out, a, b);
    case BinaryOp::Le:
      return map<Out, In, In>(context, name, Comparison<BinaryOp::Le, Out, In>{}, out, a, b);
    case BinaryOp::Gt:
      return map<Out, In, In>(context, name, Comparison<BinaryOp::Gt, Out, In>{}, out, a, b);
    case BinaryOp::Ge:
      return map<Out, In, In>(context, name, Comparison<BinaryOp::Ge, Out, In>{}, out, a, b);
    default:
      break;
  }
}

template <BinaryOp op, typename S, typename T = compute_t<S>>
void run_binary(const Context& context, const TensorRef& out, const TensorRef& a,
                const TensorRef& b, T alpha) {
  map<S, S, S>(context, "cuda binary", OnStored<S, BinaryFunction<op, T>>{{alpha}}, out, a, b);
}

// Ops defined for every dtype; false for the others.
template <typename S, typename T = compute_t<S>>
bool binary_any_dtype(const Context& context, BinaryOp op, const TensorRef& out, const TensorRef& a,
                      const TensorRef& b, T alpha) {
  switch (op) {
    case BinaryOp::Add:
      run_binary<BinaryOp::Add, S>(context, out, a, b, alpha);
      return true;
    case BinaryOp::Sub:
      run_binary<BinaryOp::Sub, S>(context, out, a, b, alpha);
      return true;
    case BinaryOp::Mul:
      run_binary<BinaryOp::Mul, S>(context, out, a, b, alpha);
      return true;
    case BinaryOp::Maximum:
      run_binary<BinaryOp::Maximum, S>(context, out, a, b, alpha);
      return true;
    case BinaryOp::Minimum:
      run_binary<BinaryOp::Minimum, S>(context, out, a, b, alpha);
      return true;
    default:
      return false;
  }
}

// Ops that need a floating-point type.
template <typename S, typename T = compute_t<S>>
void binary_floating(const Context& context, BinaryOp op, const TensorRef& out, const TensorRef& a,
                     const TensorRef& b, T alpha) {
  switch (op) {
    case BinaryOp::Div:
      return run_binary<BinaryOp::Div, S>(context, out, a, b, alpha);
    case BinaryOp::Pow:
      return run_binary<BinaryOp::Pow, S>(context, out, a, b, alpha);
    case BinaryOp::TanhGrad:
      return run_binary<BinaryOp::TanhGrad, S>(context, out, a, b, alpha);
    case BinaryOp::SigmoidGrad:
      return run_binary<BinaryOp::SigmoidGrad, S>(context, out, a, b, alpha);
    case BinaryOp::ReluGrad:
      return run_binary<BinaryOp::ReluGrad, S>(context, out, a, b, alpha);
    case BinaryOp::GeluGrad:
      return run_binary<BinaryOp::GeluGrad, S>(context, out, a, b, alpha);
    case BinaryOp::LeakyReluGrad:
      return run_binary<BinaryOp::LeakyReluGrad, S>(context, out, a, b, alpha);
    default:
      break;
  }
  throw Error(detail::concat("cuda binary: unknown op ", static_cast<int>(op)));
}

}  // namespace

void CudaBackend::fill(const TensorRef& out, double value) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  dispatch_storage(out.dtype, "cuda fill", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T typed_value = static_cast<T>(value);
    // +0 (and the integer 0) is all zero bytes.
    if (typed_value == T{0} && !std::signbit(static_cast<double>(typed_value)) &&
        is_contiguous(out)) {
      NG_CUDA_CHECK(cudaMemsetAsync(out.data, 0, out.numel() * sizeof(T), context.stream));
      return;
    }
    map<T>(context, "cuda fill", Constant<T>{typed_value}, out);
  });
}

void CudaBackend::arange(const TensorRef& out, double start, double step) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  const std::int64_t n = out.numel();
  if (n == 0) return;
  const TensorRef* const operands[1] = {&out};
  Indexer indexers[1];
  make_indexers(operands, indexers, "cuda arange");
  dispatch_storage(out.dtype, "cuda arange", [&](auto tag) {
    using T = typename decltype(tag)::type;
    arange_kernel<<<grid_for(n, context), threads_per_block, 0, context.stream>>>(
        out.ptr<T>(), indexers[0], n, start, step);
    NG_CUDA_CHECK_LAUNCH();
  });
}

void CudaBackend::copy(const TensorRef& dst, const TensorRef& src) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  dispatch_storage(dst.dtype, "cuda copy", [&](auto dst_tag) {
    dispatch_storage(src.dtype, "cuda copy", [&](auto src_tag) {
      copy_typed<typename decltype(dst_tag)::type, typename decltype(src_tag)::type>(context, dst,
                                                                                     src);
    });
  });
}

void CudaBackend::unary(UnaryOp op, const TensorRef& out, const TensorRef& in, double alpha,
                        double beta) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  NG_CHECK(out.dtype == in.dtype, "cuda unary", unary_name(op), ": out is ", out.dtype,
           " but in is ", in.dtype);
  dispatch_storage(out.dtype, "cuda unary", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using T = compute_t<S>;
    const T typed_alpha = static_cast<T>(alpha), typed_beta = static_cast<T>(beta);
    if (unary_any_dtype<S>(context, op, out, in, typed_alpha, typed_beta)) return;
    if constexpr (std::is_floating_point_v<T>) {
      unary_floating<S>(context, op, out, in, typed_alpha, typed_beta);
    } else {
      throw Error(detail::concat("cuda unary: ", unary_name(op), " is not supported for ",
                                 out.dtype, "; convert to a float dtype"));
    }
  });
}

void CudaBackend::binary(BinaryOp op, const TensorRef& out, const TensorRef& a, const TensorRef& b,
                         double alpha) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  NG_CHECK(a.dtype == b.dtype, "cuda binary", binary_name(op), ": a is ", a.dtype, " but b is ",
           b.dtype);
  if (is_comparison(op)) {
    dispatch_storage(out.dtype, "cuda binary", [&](auto out_tag) {
      dispatch_storage(a.dtype, "cuda binary", [&](auto in_tag) {
        comparison<typename decltype(out_tag)::type, typename decltype(in_tag)::type>(context, op,
                                                                                      out, a, b);
      });
    });
    return;
  }
  NG_CHECK(out.dtype == a.dtype, "cuda binary", binary_name(op), ": out is ", out.dtype,
           " but the operands are ", a.dtype);
  dispatch_storage(out.dtype, "cuda binary", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using T = compute_t<S>;
    const T typed_alpha = static_cast<T>(alpha);
    if (binary_any_dtype<S>(context, op, out, a, b, typed_alpha)) return;
    if constexpr (std::is_floating_point_v<T>) {
      binary_floating<S>(context, op, out, a, b, typed_alpha);
    } else if (op == BinaryOp::Div) {
      throw Error("cuda binary: int64 division is not supported; convert to a float dtype");
    } else {
      throw Error(detail::concat("cuda binary: ", binary_name(op), " is not supported for ",
                                 out.dtype, "; convert to a float dtype"));
    }
  });
}

// out = cond != 0 ? a : b. cond may have any dtype; a, b and out share one.
void CudaBackend::where(const TensorRef& out, const TensorRef& cond, const TensorRef& a,
                        const TensorRef& b) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  NG_CHECK(out.dtype == a.dtype && out.dtype == b.dtype, "cuda where",
           "out, a and b must share a dtype, got ", out.dtype, ", ", a.dtype, " and ", b.dtype);
  dispatch_storage(out.dtype, "cuda where", [&](auto value_tag) {
    dispatch_storage(cond.dtype, "cuda where", [&](auto cond_tag) {
      using T = typename decltype(value_tag)::type;
      using C = typename decltype(cond_tag)::type;
      map<T, C, T, T>(context, "cuda where", Select<T, C>{}, out, cond, a, b);
    });
  });
}

}  // namespace normgrad::backend::cuda
