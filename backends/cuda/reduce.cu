// Reductions: Sum (times a scale), Max, Min over any set of dims, and ArgMax/ArgMin over one.
//
// The input's dims split into the kept ones (one output each position) and the reduced ones
// (the "region" that each output reduces). Each output's region is cut into `splits` chunks
// of consecutive region positions, and a group of threads reduces one (output, chunk) pair:
//   row plan:     the group is one thread (regions of at most 16 elements), one warp (up to
//                 2048) or one block of 256 threads; its threads take every group-th element
//                 of the chunk, so a warp reads consecutive addresses when the region is
//                 contiguous (x.sum(-1)).
//   column plan:  when the outputs, not the region, are adjacent in memory (x.sum(0) of a
//                 row-major matrix), a block of 256 threads is a tile of up to 32 adjacent
//                 outputs times 8 to 64 rows: consecutive threads read consecutive outputs of
//                 one row, and the block's rows are combined in shared memory.
// Every thread keeps four accumulators (four loads in flight, and short sequential chains of
// additions), combines them, and the group combines its threads by a butterfly over each warp
// (warp shuffles) and then over the block's warps. With one chunk per output the group writes
// the output; with several, it writes a partial result to a Workspace, and a second kernel
// combines each output's partials in chunk order (one warp per output).
//
// Why the results are deterministic: the chunks, and who reduces which element in which order,
// follow from the shapes alone. Grids are sized to the device and walk the (output, chunk)
// pairs in a grid-stride loop, but each pair is always reduced by the same kind of group in
// the same order. Nothing is added with atomics.
//
// As on the CPU, sums accumulate in the input's type (float32 stays float32); each thread adds
// at most 64 elements in four chains before the tree takes over, so the error stays near that
// of the CPU's pairwise sums. Max and Min propagate NaN; ArgMax and ArgMin return the first
// index of the extreme value, a NaN counting as more extreme than any number. bfloat16 input
// is widened as it is loaded and combined in float32, and a bfloat16 result rounded once: the
// float32 reduction of the same values (backends/compute_type.h).

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "backends/compute_type.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/device_guard.h"
#include "backends/cuda/launch.cuh"
#include "backends/dtype_dispatch.h"

namespace normgrad::backend::cuda {

namespace {

constexpr unsigned full_warp = 0xffffffffu;

// ---- what is being reduced --------------------------------------------------------------------
//
// A reducer says how values combine: Value is what threads carry (the running sum, or a value
// with its index), load turns the input at region position p into a Value, combine is
// associative and commutative (the sum up to rounding), identity changes nothing it is
// combined with, and finish turns the final Value into the output.

template <typename T> __device__ __forceinline__ T lowest_value() {
  if constexpr (std::is_integral_v<T>)
    return std::numeric_limits<T>::lowest();
  else
    return -std::numeric_limits<T>::infinity();
}

template <typename T> __device__ __forceinline__ T highest_value() {
  if constexpr (std::is_integral_v<T>)
    return std::numeric_limits<T>::max();
  else
    return std::numeric_limits<T>::infinity();
}

// S is the stored type of the input and the output, T = compute_t<S> the one values are
// combined in (float32 for bfloat16, whose result is rounded once, in finish).
template <typename S, typename T = compute_t<S>> struct SumReducer {
  using Value = T;
  using Out = S;
  double scale;
  // -0 is the identity of IEEE addition (-0 + -0 = -0, while +0 + -0 = +0).
  __device__ static Value identity() {
    if constexpr (std::is_integral_v<T>)
      return T{0};
    else
      return -T{0};
  }
  __device__ static Value load(S x, std::int64_t) { return static_cast<T>(x); }
  __device__ static Value combine(Value a, Value b) {
    if constexpr (std::is_integral_v<T>)  // wraps around, as on the CPU
      return static_cast<T>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
    else
      return a + b;
  }
  __device__ Out finish(Value sum) const {
    if (scale == 1.0) return static_cast<S>(sum);
    if constexpr (std::is_integral_v<T>)
      return static_cast<S>(static_cast<double>(sum) * scale);
    else
      return static_cast<S>(sum * static_cast<T>(scale));
  }
  __device__ static Value shuffle_xor(Value v, int lane_mask) {
    return __shfl_xor_sync(full_warp, v, lane_mask);
  }
};

// Max (is_max) or Min; a NaN wins (x != x only for NaN).
template <typename S, bool is_max, typename T = compute_t<S>> struct ExtremeReducer {
  using Value = T;
  using Out = S;
  __device__ static Value identity() { return is_max ? lowest_value<T>() : highest_value<T>(); }
  __device__ static Value load(S x, std::int64_t) { return static_cast<T>(x); }
  __device__ static Value combine(Value a, Value b) {
    return ((is_max ? a > b : a < b) || a != a) ? a : b;
  }
  __device__ Out finish(Value v) const { return static_cast<S>(v); }
  __device__ static Value shuffle_xor(Value v, int lane_mask) {
    return __shfl_xor_sync(full_warp, v, lane_mask);
  }
};

template <typename T> struct ArgValue {
  T value;
  std::int64_t index;
};

// ArgMax (is_max) or ArgMin: the better value, NaN first; on ties the smaller index, which
// makes combine commutative and gives the first index whatever the order of combination.
template <typename S, bool is_max, typename T = compute_t<S>> struct ArgReducer {
  using Value = ArgValue<T>;
  using Out = std::int64_t;
  __device__ static Value identity() {
    return {is_max ? lowest_value<T>() : highest_value<T>(),
            std::numeric_limits<std::int64_t>::max()};
  }
  __device__ static Value load(S x, std::int64_t p) { return {static_cast<T>(x), p}; }
  __device__ static Value combine(Value a, Value b) {
    const bool a_nan = a.value != a.value, b_nan = b.value != b.value;
    if (a_nan != b_nan) return a_nan ? a : b;
    if (!a_nan) {
      if (is_max ? a.value > b.value : a.value < b.value) return a;
      if (is_max ? b.value > a.value : b.value < a.value) return b;
    }
    return a.index <= b.index ? a : b;
  }
  __device__ Out finish(Value v) const { return v.index; }
  __device__ static Value shuffle_xor(Value v, int lane_mask) {
    return {__shfl_xor_sync(full_warp, v.value, lane_mask),
            __shfl_xor_sync(full_warp, v.index, lane_mask)};
  }
};

// ---- combining threads in a fixed order -------------------------------------------------------

// The butterfly over the 32 lanes; every lane ends with the combination of all 32.
template <typename Reducer>
__device__ __forceinline__ typename Reducer::Value warp_reduce(typename Reducer::Value v) {
  for (int offset = warp_size / 2; offset > 0; offset /= 2)
    v = Reducer::combine(v, Reducer::shuffle_xor(v, offset));
  return v;
}

// Each warp's butterfly, then a butterfly over the warps' results (held in `shared`, one per
// warp); every thread must call it, and gets the block's result.
template <typename Reducer>
__device__ typename Reducer::Value block_reduce(typename Reducer::Value v,
                                                typename Reducer::Value* shared) {
  const int lane = threadIdx.x % warp_size, warp = threadIdx.x / warp_size;
  v = warp_reduce<Reducer>(v);
  __syncthreads();  // the previous call's reads of `shared` are done
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  const int warps = blockDim.x / warp_size;
  v = lane < warps ? shared[lane] : Reducer::identity();
  return warp_reduce<Reducer>(v);
}

// ---- the kernels ------------------------------------------------------------------------------

// Where the operands are: kept_out and kept_in address output o (kept dims, row-major),
// region addresses region position p from the first element of an output's region.
struct ReduceLayout {
  Indexer kept_out, kept_in, region;
  std::int64_t outputs = 1;  // kept elements
  std::int64_t length = 1;   // region elements per output
};

// Chunk `split` of an output's region, elements [begin, end), taken by `count` threads, this
// one starting `first` elements in: four accumulators over four consecutive steps.
template <typename Reducer, typename T>
__device__ __forceinline__ typename Reducer::Value reduce_chunk(const T* base,
                                                                const Indexer& region,
                                                                std::int64_t first,
                                                                std::int64_t end,
                                                                std::int64_t count) {
  using Value = typename Reducer::Value;
  Value a0 = Reducer::identity(), a1 = a0, a2 = a0, a3 = a0;
  std::int64_t p = first;
  for (; p + 3 * count < end; p += 4 * count) {
    const T x0 = base[region.offset(p)];
    const T x1 = base[region.offset(p + count)];
    const T x2 = base[region.offset(p + 2 * count)];
    const T x3 = base[region.offset(p + 3 * count)];
    a0 = Reducer::combine(a0, Reducer::load(x0, p));
    a1 = Reducer::combine(a1, Reducer::load(x1, p + count));
    a2 = Reducer::combine(a2, Reducer::load(x2, p + 2 * count));
    a3 = Reducer::combine(a3, Reducer::load(x3, p + 3 * count));
  }
  for (; p < end; p += count) a0 = Reducer::combine(a0, Reducer::load(base[region.offset(p)], p));
  return Reducer::combine(Reducer::combine(a0, a1), Reducer::combine(a2, a3));
}

// Row plan: a group of `group` threads (1, 32 or blockDim.x) per (output, chunk) pair, the pair
// w = output * splits + split. With one split the output is written; otherwise partials[w].
template <int group, typename Reducer, typename T>
__global__ void reduce_rows_kernel(Reducer reducer, const T* in, typename Reducer::Out* out,
                                   typename Reducer::Value* partials, ReduceLayout layout,
                                   std::int64_t splits, std::int64_t chunk) {
  using Value = typename Reducer::Value;
  __shared__ Value shared[warp_size];
  const int size = group > 0 ? group : static_cast<int>(blockDim.x);  // 0: the whole block
  const int lane = threadIdx.x % size;
  const std::int64_t groups = std::int64_t{gridDim.x} * (blockDim.x / size);
  const std::int64_t pairs = layout.outputs * splits;
  // w is the same for all threads of a group, so a group enters and leaves the loop together
  // (the warp shuffles and __syncthreads below need every thread of the group).
  for (std::int64_t w = (blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x) / size; w < pairs;
       w += groups) {
    const std::int64_t o = w / splits, begin = w % splits * chunk;
    const std::int64_t end = std::min(layout.length, begin + chunk);
    const T* base = in + layout.kept_in.offset(o);
    Value v = reduce_chunk<Reducer>(base, layout.region, begin + lane, end, size);
    if constexpr (group == warp_size) v = warp_reduce<Reducer>(v);
    if constexpr (group == 0) v = block_reduce<Reducer>(v, shared);
    if (lane == 0) {
      if (splits == 1)
        out[layout.kept_out.offset(o)] = reducer.finish(v);
      else
        partials[w] = v;
    }
  }
}

// Column plan: a block of blockDim.x adjacent outputs (a power of two up to 32) times
// blockDim.y rows (256 / blockDim.x) per (line, tile, chunk) item, where a line is one row of
// `width` adjacent outputs and a tile blockDim.x of them. The rows of the block are combined
// by a tree in shared memory, in a fixed order.
template <typename Reducer, typename T>
__global__ void reduce_columns_kernel(Reducer reducer, const T* in, typename Reducer::Out* out,
                                      typename Reducer::Value* partials, ReduceLayout layout,
                                      std::int64_t width, std::int64_t splits, std::int64_t chunk) {
  using Value = typename Reducer::Value;
  __shared__ Value shared[threads_per_block];
  const int x = threadIdx.x, y = threadIdx.y, tile_width = blockDim.x, rows = blockDim.y;
  const std::int64_t tiles = (width + tile_width - 1) / tile_width;
  const std::int64_t items = layout.outputs / width * tiles * splits;
  // The item is the same for the whole block, so every thread reaches every __syncthreads.
  for (std::int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const std::int64_t split = item % splits, tile = item / splits % tiles;
    const std::int64_t line = item / splits / tiles;
    const std::int64_t column = tile * tile_width + x;
    const std::int64_t o = line * width + column;
    Value v = Reducer::identity();
    if (column < width) {
      const std::int64_t begin = split * chunk, end = std::min(layout.length, begin + chunk);
      v = reduce_chunk<Reducer>(in + layout.kept_in.offset(o), layout.region, begin + y, end, rows);
    }
    shared[y * tile_width + x] = v;
    __syncthreads();
    for (int half = rows / 2; half > 0; half /= 2) {
      if (y < half)
        shared[y * tile_width + x] =
            Reducer::combine(shared[y * tile_width + x], shared[(y + half) * tile_width + x]);
      __syncthreads();
    }
    if (y == 0 && column < width) {
      if (splits == 1)
        out[layout.kept_out.offset(o)] = reducer.finish(shared[x]);
      else
        partials[o * splits + split] = shared[x];
    }
    __syncthreads();  // shared[x] is read before the next item writes it
  }
}

// The second pass: one warp per output combines its `splits` partials, lane k taking
// partials k, k + 32, ..., then the butterfly.
template <typename Reducer>
__global__ void reduce_partials_kernel(Reducer reducer, const typename Reducer::Value* partials,
                                       typename Reducer::Out* out, Indexer kept_out,
                                       std::int64_t outputs, std::int64_t splits) {
  const int lane = threadIdx.x % warp_size;
  const std::int64_t warps = std::int64_t{gridDim.x} * (blockDim.x / warp_size);
  for (std::int64_t o = (blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x) / warp_size;
       o < outputs; o += warps) {
    typename Reducer::Value v = Reducer::identity();
    for (std::int64_t s = lane; s < splits; s += warp_size)
      v = Reducer::combine(v, partials[o * splits + s]);
    v = warp_reduce<Reducer>(v);
    if (lane == 0) out[kept_out.offset(o)] = reducer.finish(v);
  }
}

// ---- planning -------------------------------------------------------------------------------

// About two full waves of an H100 (132 multiprocessors x 2048 threads): when the outputs alone
// give fewer threads, regions are split to make up the difference. The constant depends on
// no device, so the splits (and the results) are the same on every GPU.
constexpr std::int64_t target_threads = std::int64_t{1} << 18;
// Elements one thread reduces in a chunk: at most 64 (16 per accumulator, which bounds the
// rounding of the sequential part of a sum), at least 8 when splitting for parallelism.
constexpr std::int64_t max_per_thread = 64;
constexpr std::int64_t min_per_thread = 8;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Chunks per output for `items` groups of `threads` threads each over regions of `length`.
std::int64_t pick_splits(std::int64_t items, std::int64_t threads, std::int64_t length) {
  const std::int64_t fewest = ceil_div(length, threads * max_per_thread);
  const std::int64_t most = std::max(fewest, ceil_div(length, threads * min_per_thread));
  const std::int64_t wanted = ceil_div(target_threads, threads * items);
  return std::clamp(wanted, std::max<std::int64_t>(fewest, 1), std::max<std::int64_t>(most, 1));
}

template <typename Reducer, typename T>
void run_reduce(const Context& context, const Reducer& reducer, const ReduceLayout& layout,
                const T* in, typename Reducer::Out* out) {
  using Value = typename Reducer::Value;
  const std::int64_t outputs = layout.outputs, length = layout.length;
  const cudaStream_t stream = context.stream;
  const Indexer& kept = layout.kept_in;
  const bool columns = kept.rank > 0 && kept.strides[kept.rank - 1] == 1 &&
                       layout.region.rank > 0 && layout.region.strides[layout.region.rank - 1] != 1;

  std::int64_t splits = 1, chunk = length;
  int tile_width = 0, group = 1;
  std::int64_t width = 0;
  if (columns) {
    width = kept.sizes[kept.rank - 1];
    tile_width = 4;
    while (tile_width < warp_size && tile_width < width) tile_width *= 2;
    const std::int64_t rows = threads_per_block / tile_width;
    // A group is the `rows` threads of one output column of a tile.
    splits = pick_splits(outputs / width * ceil_div(width, tile_width) * tile_width, rows, length);
  } else {
    group = length <= 16 ? 1 : length <= 2048 ? warp_size : threads_per_block;
    if (group > 1) splits = pick_splits(outputs, group, length);
  }
  if (splits > 1) {
    chunk = ceil_div(length, splits);
    splits = ceil_div(length, chunk);  // no empty chunk
  }

  // With several chunks per output, partial results go to scratch memory first.
  Workspace workspace(context, splits > 1 ? outputs * splits * sizeof(Value) : 0);
  Value* partials = splits > 1 ? workspace.as<Value>() : nullptr;
  const std::int64_t pairs = outputs * splits;
  if (columns) {
    const dim3 block(tile_width, threads_per_block / tile_width);
    const std::int64_t items = outputs / width * ceil_div(width, tile_width) * splits;
    reduce_columns_kernel<<<grid_for(items * threads_per_block, context), block, 0, stream>>>(
        reducer, in, out, partials, layout, width, splits, chunk);
  } else if (group == 1) {
    reduce_rows_kernel<1><<<grid_for(pairs, context), threads_per_block, 0, stream>>>(
        reducer, in, out, partials, layout, splits, chunk);
  } else if (group == warp_size) {
    reduce_rows_kernel<warp_size>
        <<<grid_for(pairs * warp_size, context), threads_per_block, 0, stream>>>(
            reducer, in, out, partials, layout, splits, chunk);
  } else {
    reduce_rows_kernel<0>
        <<<grid_for(pairs * threads_per_block, context), threads_per_block, 0, stream>>>(
            reducer, in, out, partials, layout, splits, chunk);
  }
  NG_CUDA_CHECK_LAUNCH();
  if (splits > 1) {
    reduce_partials_kernel<<<grid_for(outputs * warp_size, context), threads_per_block, 0,
                             stream>>>(reducer, partials, out, layout.kept_out, outputs, splits);
    NG_CUDA_CHECK_LAUNCH();
  }
}

// A TensorRef over the dims of `in`'s shape whose bit in `mask` is set, with `ref`'s strides.
TensorRef restrict_dims(const TensorRef& ref, const Shape& shape, std::uint64_t mask) {
  TensorRef result;
  result.data = ref.data;
  result.dtype = ref.dtype;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (!((mask >> d) & 1)) continue;
    result.shape.push_back(shape[d]);
    result.strides.push_back(ref.strides[d]);
  }
  return result;
}

}  // namespace

void CudaBackend::reduce(ReduceOp op, const TensorRef& out, const TensorRef& in,
                         std::uint64_t reduced, double scale) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  const char* name = "cuda reduce";
  const int rank = static_cast<int>(in.rank());
  NG_CHECK(rank <= 64, name, "rank ", rank, " is above 64");
  NG_CHECK(out.rank() == rank, name, "out has rank ", out.rank(), " but in has rank ", rank);
  std::uint64_t reduced_mask = 0;
  for (int d = 0; d < rank; ++d)
    if (((reduced >> d) & 1) || (out.shape[d] == 1 && in.shape[d] != 1)) reduced_mask |= 1ull << d;
  const std::uint64_t all = rank == 64 ? ~0ull : (1ull << rank) - 1;
  const std::uint64_t kept_mask = all & ~reduced_mask;

  ReduceLayout layout;
  {
    const TensorRef kept_out = restrict_dims(out, in.shape, kept_mask);
    const TensorRef kept_in = restrict_dims(in, in.shape, kept_mask);
    const TensorRef region = restrict_dims(in, in.shape, reduced_mask);
    const TensorRef* const kept_operands[2] = {&kept_out, &kept_in};
    Indexer kept[2];
    make_indexers(kept_operands, kept, name);
    const TensorRef* const region_operands[1] = {&region};
    Indexer region_indexer[1];
    make_indexers(region_operands, region_indexer, name);
    layout.kept_out = kept[0];
    layout.kept_in = kept[1];
    layout.region = region_indexer[0];
    layout.outputs = kept_in.numel();
    layout.length = region.numel();
  }
  if (layout.outputs == 0) return;

  if (op == ReduceOp::ArgMax || op == ReduceOp::ArgMin) {
    NG_CHECK(out.dtype == DType::Int64, name, "argmax/argmin write int64, got ", out.dtype);
    NG_CHECK(layout.length > 0, name, "argmax/argmin over an empty dim of shape ", in.shape);
    int dim = -1;  // the one reduced dim of size > 1; none means every index is 0
    for (int d = 0; d < rank; ++d) {
      if (!((reduced_mask >> d) & 1) || in.shape[d] == 1) continue;
      NG_CHECK(dim < 0, name, "argmax/argmin reduce a single dim, got several of shape ", in.shape);
      dim = d;
    }
    dispatch_storage(in.dtype, name, [&](auto tag) {
      using S = typename decltype(tag)::type;
      auto* result = out.ptr<std::int64_t>();
      if (op == ReduceOp::ArgMax)
        run_reduce(context, ArgReducer<S, true>{}, layout, in.ptr<const S>(), result);
      else
        run_reduce(context, ArgReducer<S, false>{}, layout, in.ptr<const S>(), result);
    });
    return;
  }

  NG_CHECK(out.dtype == in.dtype, name, "out is ", out.dtype, " but in is ", in.dtype);
  if (layout.length == 0) {
    NG_CHECK(op == ReduceOp::Sum, name, "max/min over an empty dim of shape ", in.shape);
    fill(out, 0.0);
    return;
  }
  dispatch_storage(in.dtype, name, [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* x = in.ptr<const S>();
    S* result = out.ptr<S>();
    switch (op) {
      case ReduceOp::Sum:
        return run_reduce(context, SumReducer<S>{scale}, layout, x, result);
      case ReduceOp::Max:
        return run_reduce(context, ExtremeReducer<S, true>{}, layout, x, result);
      case ReduceOp::Min:
        return run_reduce(context, ExtremeReducer<S, false>{}, layout, x, result);
      default:
        throw Error(detail::concat(name, ": unknown op ", static_cast<int>(op)));
    }
  });
}

}  // namespace normgrad::backend::cuda
