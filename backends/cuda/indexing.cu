// Indexing along one dim (backend.h gives the contract), ported from backends/cpu/indexing.cpp.
// Every operand may be a strided view; the dims around `dim` are addressed with Indexers.
//
// index_select and gather: one thread per output element, a plain strided read through the
// int64 index (bit copies by element size: the values are never looked at).
//
// index_add and scatter_add accumulate, and must add repeated indices in order without float
// atomics. Both sort instead: the (target, position) pairs are stable-sorted by target with
// CUB's radix sort, so equal targets form runs that keep increasing position order. One thread
// per run (and per column of the dims that are not indexed) then reads the target's current
// value, adds the run's sources in that order, and writes the target once. No two threads own
// one target, and each target adds its sources in the order of the CPU's serial loop, so the
// results are the CPU's bits on every run.
//   index_add:   target = index[i], position i; one sort serves every outer and inner column.
//                A thread walks its whole run, so a value repeated r times costs r dependent
//                steps (the padding token of an embedding, say); distinct values run in
//                parallel.
//   scatter_add: target = (column, index value), position = the element's row-major number in
//                index's shape, whose order within a column is the order along `dim`.
// scatter_add skips the sort when a column is short (at most 64 along `dim`) or when there are
// enough columns to fill the device: one thread per column then walks the column along `dim` in
// order, adding into its own line of out, which no other column touches. That costs one
// dependent step per element of the column.
// bfloat16: a run's thread widens the target and its sources, adds in float32 and rounds once
// (backends/compute_type.h). The column walk, which adds in place, would round at every step,
// so bfloat16 always takes the sort; each target then gets the float32 sums' bits, rounded.

#include <bit>
#include <cstdint>
#include <cub/device/device_radix_sort.cuh>
#include <type_traits>

#include "backends/compute_type.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/device_guard.h"
#include "backends/cuda/launch.cuh"
#include "backends/dtype_dispatch.h"

namespace normgrad::backend::cuda {

namespace {

// Integers wrap, as on the CPU (backends/cpu/elementwise_math.h).
template <typename T> __device__ __forceinline__ T add_values(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
  else
    return a + b;
}

// ---- kernels ---------------------------------------------------------------------------------

// out[o, i, n] = in[o, index[i], n]: o over the dims before `dim`, n over those after it
// (`inner` elements), i over `count` entries.
template <typename Bits>
__global__ void index_select_kernel(Bits* out, const Bits* in, const std::int64_t* index,
                                    std::int64_t index_stride, Indexer out_outer, Indexer in_outer,
                                    Indexer out_inner, Indexer in_inner,
                                    std::int64_t out_dim_stride, std::int64_t in_dim_stride,
                                    std::int64_t count, std::int64_t inner, std::int64_t total) {
  NG_KERNEL_LOOP(e, total) {
    const std::int64_t n = e % inner, i = e / inner % count, o = e / inner / count;
    const std::int64_t source = index[i * index_stride];
    out[out_outer.offset(o) + i * out_dim_stride + out_inner.offset(n)] =
        in[in_outer.offset(o) + source * in_dim_stride + in_inner.offset(n)];
  }
}

// out[e] = in[e with its `dim` coordinate replaced by index[e]]; in_indexer has stride 0 there.
template <typename Bits>
__global__ void gather_kernel(Bits* out, const Bits* in, const std::int64_t* index,
                              Indexer out_indexer, Indexer index_indexer, Indexer in_indexer,
                              std::int64_t in_dim_stride, std::int64_t total) {
  NG_KERNEL_LOOP(e, total) {
    out[out_indexer.offset(e)] =
        in[in_indexer.offset(e) + index[index_indexer.offset(e)] * in_dim_stride];
  }
}

// keys[i] = index[i], positions[i] = i.
__global__ void index_pairs_kernel(std::uint64_t* keys, std::int64_t* positions,
                                   const std::int64_t* index, std::int64_t index_stride,
                                   std::int64_t count) {
  NG_KERNEL_LOOP(i, count) {
    keys[i] = static_cast<std::uint64_t>(index[i * index_stride]);
    positions[i] = i;
  }
}

// Threads over (o, k, n), k a place in the sorted order; the thread at the head of a run of
// equal keys adds the run's src rows, in position order, into out's row keys[k].
template <typename S, typename T = compute_t<S>>
__global__ void index_add_runs_kernel(S* out, const S* src, const std::uint64_t* keys,
                                      const std::int64_t* positions, Indexer out_outer,
                                      Indexer src_outer, Indexer out_inner, Indexer src_inner,
                                      std::int64_t out_dim_stride, std::int64_t src_dim_stride,
                                      std::int64_t count, std::int64_t inner, std::int64_t total) {
  NG_KERNEL_LOOP(e, total) {
    const std::int64_t n = e % inner, k = e / inner % count, o = e / inner / count;
    const std::uint64_t key = keys[k];
    if (k > 0 && keys[k - 1] == key) continue;
    S* target = out + out_outer.offset(o) + static_cast<std::int64_t>(key) * out_dim_stride +
                out_inner.offset(n);
    const S* source = src + src_outer.offset(o) + src_inner.offset(n);
    T sum = static_cast<T>(*target);
    for (std::int64_t run = k; run < count && keys[run] == key; ++run)
      sum = add_values(sum, static_cast<T>(source[positions[run] * src_dim_stride]));
    *target = static_cast<S>(sum);
  }
}

// One thread per column c (a position over every dim of index but `dim`): walks the column
// along `dim` in order, adding into out's line of that column.
template <typename T>
__global__ void scatter_add_columns_kernel(T* out, const T* src, const std::int64_t* index,
                                           Indexer out_columns, Indexer index_columns,
                                           Indexer src_columns, std::int64_t out_dim_stride,
                                           std::int64_t index_dim_stride,
                                           std::int64_t src_dim_stride, std::int64_t count,
                                           std::int64_t columns) {
  NG_KERNEL_LOOP(c, columns) {
    T* line = out + out_columns.offset(c);
    const std::int64_t* targets = index + index_columns.offset(c);
    const T* sources = src + src_columns.offset(c);
    for (std::int64_t j = 0; j < count; ++j) {
      T& target = line[targets[j * index_dim_stride] * out_dim_stride];
      target = add_values(target, sources[j * src_dim_stride]);
    }
  }
}

// Element e of index's shape [outer, count, inner] (row-major) lies in column
// c = (e / (count inner)) inner + e % inner, at j = e / inner % count along `dim`.
__device__ __forceinline__ std::int64_t column_of(std::int64_t e, std::int64_t count,
                                                  std::int64_t inner) {
  return e / (count * inner) * inner + e % inner;
}

// keys[e] = c D + index[e] (D = out's size along dim), positions[e] = e.
__global__ void scatter_pairs_kernel(std::uint64_t* keys, std::int64_t* positions,
                                     const std::int64_t* index, Indexer index_columns,
                                     std::int64_t index_dim_stride, std::int64_t targets_per_column,
                                     std::int64_t count, std::int64_t inner, std::int64_t total) {
  NG_KERNEL_LOOP(e, total) {
    const std::int64_t c = column_of(e, count, inner), j = e / inner % count;
    const std::int64_t target = index[index_columns.offset(c) + j * index_dim_stride];
    keys[e] = static_cast<std::uint64_t>(c * targets_per_column + target);
    positions[e] = e;
  }
}

// The thread at the head of each run of equal keys adds the run's sources, in position order,
// into the one out element the key names.
template <typename S, typename T = compute_t<S>>
__global__ void scatter_add_runs_kernel(S* out, const S* src, const std::uint64_t* keys,
                                        const std::int64_t* positions, Indexer out_columns,
                                        Indexer src_columns, std::int64_t out_dim_stride,
                                        std::int64_t src_dim_stride,
                                        std::int64_t targets_per_column, std::int64_t count,
                                        std::int64_t inner, std::int64_t total) {
  NG_KERNEL_LOOP(k, total) {
    const std::uint64_t key = keys[k];
    if (k > 0 && keys[k - 1] == key) continue;
    const std::int64_t c = static_cast<std::int64_t>(key) / targets_per_column;
    const std::int64_t target = static_cast<std::int64_t>(key) % targets_per_column;
    S* element = out + out_columns.offset(c) + target * out_dim_stride;
    T sum = static_cast<T>(*element);
    for (std::int64_t run = k; run < total && keys[run] == key; ++run) {
      const std::int64_t e = positions[run];
      sum = add_values(
          sum, static_cast<T>(src[src_columns.offset(c) + e / inner % count * src_dim_stride]));
    }
    *element = static_cast<S>(sum);
  }
}

// ---- host helpers ----------------------------------------------------------------------------

// `ref` over the iteration shape `shape`, with every dim whose bit is clear in `keep` set to
// size 1, so that make_indexers drops it: a row-major Indexer over the kept dims alone.
TensorRef restricted(const TensorRef& ref, const Shape& shape, std::uint64_t keep) {
  TensorRef result = ref;
  result.shape = shape;
  for (std::size_t d = 0; d < shape.size(); ++d)
    if (d >= 64 || !((keep >> d) & 1)) result.shape[d] = 1;
  return result;
}

std::uint64_t dims_before(int dim) { return (std::uint64_t{1} << dim) - 1; }
std::uint64_t dims_after(int dim) { return ~((std::uint64_t{2} << dim) - 1); }

// Indexers of operands a and b over the dims of `shape` selected by `keep`.
void pair_indexers(const TensorRef& a, const TensorRef& b, const Shape& shape, std::uint64_t keep,
                   Indexer& a_indexer, Indexer& b_indexer, const char* op) {
  const TensorRef a_view = restricted(a, shape, keep), b_view = restricted(b, shape, keep);
  const TensorRef* const operands[2] = {&a_view, &b_view};
  Indexer indexers[2];
  make_indexers(operands, indexers, op);
  a_indexer = indexers[0];
  b_indexer = indexers[1];
}

std::int64_t product(const Shape& shape, std::uint64_t keep) {
  std::int64_t result = 1;
  for (std::size_t d = 0; d < shape.size() && d < 64; ++d)
    if ((keep >> d) & 1) result *= shape[d];
  return result;
}

// The stride of `ref` along dim, 0 for a 0-d tensor (the CPU treats it as one entry).
std::int64_t dim_stride(const TensorRef& ref, int dim) {
  return ref.rank() == 0 ? 0 : ref.strides[dim];
}

constexpr std::size_t sort_alignment = 256;

std::size_t aligned(std::size_t bytes) {
  return (bytes + sort_alignment - 1) / sort_alignment * sort_alignment;
}

// Stable-sorts n (key, position) pairs by key, every key at most largest_key (so the radix
// passes cover only the bits that can differ): fill(keys, positions) queues a kernel that
// writes the pairs, walk(sorted_keys, sorted_positions) queues the kernels that read them. The
// scratch lives until walk has queued its work, and the stream runs that work before any later user
// of the memory.
template <typename Fill, typename Walk>
void with_sorted_pairs(const Context& context, std::int64_t n, std::uint64_t largest_key,
                       Fill&& fill, Walk&& walk) {
  const int key_bits = std::max(1, static_cast<int>(std::bit_width(largest_key)));
  std::size_t temp_bytes = 0;
  NG_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      nullptr, temp_bytes, static_cast<const std::uint64_t*>(nullptr),
      static_cast<std::uint64_t*>(nullptr), static_cast<const std::int64_t*>(nullptr),
      static_cast<std::int64_t*>(nullptr), n, 0, key_bits, context.stream));
  const std::size_t array_bytes = aligned(static_cast<std::size_t>(n) * 8);
  Workspace workspace(context, 4 * array_bytes + aligned(temp_bytes));
  char* base = workspace.as<char>();
  auto* keys = reinterpret_cast<std::uint64_t*>(base);
  auto* sorted_keys = reinterpret_cast<std::uint64_t*>(base + array_bytes);
  auto* positions = reinterpret_cast<std::int64_t*>(base + 2 * array_bytes);
  auto* sorted_positions = reinterpret_cast<std::int64_t*>(base + 3 * array_bytes);
  fill(keys, positions);
  NG_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(base + 4 * array_bytes, temp_bytes, keys,
                                                sorted_keys, positions, sorted_positions, n, 0,
                                                key_bits, context.stream));
  walk(static_cast<const std::uint64_t*>(sorted_keys),
       static_cast<const std::int64_t*>(sorted_positions));
}

// Columns at or above this many per multiprocessor fill the device on their own, so
// scatter_add walks them without sorting whatever their length.
constexpr std::int64_t columns_per_multiprocessor = 1024;
// Columns at most this long are walked without sorting whatever their number.
constexpr std::int64_t short_column = 64;

}  // namespace

void CudaBackend::index_select(const TensorRef& out, const TensorRef& in, int dim,
                               const TensorRef& index) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  const char* op = "cuda index_select";
  NG_CHECK(out.dtype == in.dtype, op, "out is ", out.dtype, " but in is ", in.dtype);
  const std::int64_t total = out.numel();
  if (total == 0) return;
  const Shape& shape = out.shape;
  Indexer out_outer, in_outer, out_inner, in_inner;
  pair_indexers(out, in, shape, dims_before(dim), out_outer, in_outer, op);
  pair_indexers(out, in, shape, dims_after(dim), out_inner, in_inner, op);
  const std::int64_t count = out.rank() == 0 ? 1 : shape[dim];
  const std::int64_t inner = product(shape, dims_after(dim));
  const std::int64_t index_stride = index.rank() == 0 ? 0 : index.strides[0];
  dispatch_bits(out.dtype, [&](auto tag) {
    using Bits = typename decltype(tag)::type;
    index_select_kernel<Bits><<<grid_for(total, context), threads_per_block, 0, context.stream>>>(
        out.ptr<Bits>(), in.ptr<const Bits>(), index.ptr<const std::int64_t>(), index_stride,
        out_outer, in_outer, out_inner, in_inner, dim_stride(out, dim), dim_stride(in, dim), count,
        inner, total);
    NG_CUDA_CHECK_LAUNCH();
  });
}

void CudaBackend::index_add(const TensorRef& out, int dim, const TensorRef& index,
                            const TensorRef& src) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  const char* op = "cuda index_add";
  NG_CHECK(out.dtype == src.dtype, op, "out is ", out.dtype, " but src is ", src.dtype);
  const Shape& shape = src.shape;
  const std::int64_t count = src.rank() == 0 ? 1 : shape[dim];
  const std::int64_t total = src.numel();
  if (total == 0 || out.numel() == 0) return;
  Indexer out_outer, src_outer, out_inner, src_inner;
  pair_indexers(out, src, shape, dims_before(dim), out_outer, src_outer, op);
  pair_indexers(out, src, shape, dims_after(dim), out_inner, src_inner, op);
  const std::int64_t inner = product(shape, dims_after(dim));
  const std::int64_t index_stride = index.rank() == 0 ? 0 : index.strides[0];
  const std::int64_t targets = out.rank() == 0 ? 1 : out.shape[dim];
  dispatch_storage(out.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    with_sorted_pairs(
        context, count, static_cast<std::uint64_t>(targets - 1),
        [&](std::uint64_t* keys, std::int64_t* positions) {
          index_pairs_kernel<<<grid_for(count, context), threads_per_block, 0, context.stream>>>(
              keys, positions, index.ptr<const std::int64_t>(), index_stride, count);
          NG_CUDA_CHECK_LAUNCH();
        },
        [&](const std::uint64_t* keys, const std::int64_t* positions) {
          index_add_runs_kernel<T>
              <<<grid_for(total, context), threads_per_block, 0, context.stream>>>(
                  out.ptr<T>(), src.ptr<const T>(), keys, positions, out_outer, src_outer,
                  out_inner, src_inner, dim_stride(out, dim), dim_stride(src, dim), count, inner,
                  total);
          NG_CUDA_CHECK_LAUNCH();
        });
  });
}

void CudaBackend::gather(const TensorRef& out, const TensorRef& in, int dim,
                         const TensorRef& index) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  const char* op = "cuda gather";
  NG_CHECK(out.dtype == in.dtype, op, "out is ", out.dtype, " but in is ", in.dtype);
  const std::int64_t total = out.numel();
  if (total == 0) return;
  // in is read at its own strides, except along dim, where the index supplies the position.
  TensorRef in_view = in;
  in_view.shape = out.shape;
  if (in.rank() > 0) in_view.strides[dim] = 0;
  const TensorRef* const operands[3] = {&out, &index, &in_view};
  Indexer indexers[3];
  make_indexers(operands, indexers, op);
  dispatch_bits(out.dtype, [&](auto tag) {
    using Bits = typename decltype(tag)::type;
    gather_kernel<Bits><<<grid_for(total, context), threads_per_block, 0, context.stream>>>(
        out.ptr<Bits>(), in.ptr<const Bits>(), index.ptr<const std::int64_t>(), indexers[0],
        indexers[1], indexers[2], dim_stride(in, dim), total);
    NG_CUDA_CHECK_LAUNCH();
  });
}

void CudaBackend::scatter_add(const TensorRef& out, int dim, const TensorRef& index,
                              const TensorRef& src) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  const char* op = "cuda scatter_add";
  NG_CHECK(out.dtype == src.dtype, op, "out is ", out.dtype, " but src is ", src.dtype);
  const Shape& shape = index.shape;
  const std::int64_t total = index.numel();
  if (total == 0) return;
  const std::int64_t count = index.rank() == 0 ? 1 : shape[dim];
  const std::int64_t inner = product(shape, dims_after(dim));
  const std::int64_t columns = total / count;
  const std::int64_t targets = out.rank() == 0 ? 1 : out.shape[dim];
  // Indexers over the columns: every dim of index but `dim`.
  const std::uint64_t column_dims = index.rank() == 0 ? 0 : ~(std::uint64_t{1} << dim);
  const TensorRef out_view = restricted(out, shape, column_dims);
  const TensorRef index_view = restricted(index, shape, column_dims);
  const TensorRef src_view = restricted(src, shape, column_dims);
  const TensorRef* const operands[3] = {&out_view, &index_view, &src_view};
  Indexer indexers[3];
  make_indexers(operands, indexers, op);
  const std::int64_t out_dim_stride = dim_stride(out, dim);
  const std::int64_t index_dim_stride = dim_stride(index, dim);
  const std::int64_t src_dim_stride = dim_stride(src, dim);
  dispatch_storage(out.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;           // stored
    if constexpr (std::is_same_v<T, compute_t<T>>) {  // not for bfloat16: see the top
      if (count <= short_column ||
          columns >= columns_per_multiprocessor * std::int64_t{context.multiprocessors}) {
        scatter_add_columns_kernel<T>
            <<<grid_for(columns, context), threads_per_block, 0, context.stream>>>(
                out.ptr<T>(), src.ptr<const T>(), index.ptr<const std::int64_t>(), indexers[0],
                indexers[1], indexers[2], out_dim_stride, index_dim_stride, src_dim_stride, count,
                columns);
        NG_CUDA_CHECK_LAUNCH();
        return;
      }
    }
    with_sorted_pairs(
        context, total, static_cast<std::uint64_t>(columns * targets - 1),
        [&](std::uint64_t* keys, std::int64_t* positions) {
          scatter_pairs_kernel<<<grid_for(total, context), threads_per_block, 0, context.stream>>>(
              keys, positions, index.ptr<const std::int64_t>(), indexers[1], index_dim_stride,
              targets, count, inner, total);
          NG_CUDA_CHECK_LAUNCH();
        },
        [&](const std::uint64_t* keys, const std::int64_t* positions) {
          scatter_add_runs_kernel<T>
              <<<grid_for(total, context), threads_per_block, 0, context.stream>>>(
                  out.ptr<T>(), src.ptr<const T>(), keys, positions, indexers[0], indexers[2],
                  out_dim_stride, src_dim_stride, targets, count, inner, total);
          NG_CUDA_CHECK_LAUNCH();
        });
  });
}

}  // namespace normgrad::backend::cuda
