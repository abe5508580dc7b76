// Reductions: Sum (times a scale), Max, Min over any set of dims, and ArgMax/ArgMin over one.
//
// The dims split into the kept ones (one output element per position) and the reduced ones
// (the "region" each output reduces over). Both are simplified like any strided layout
// (strided_loop.h); then one of two plans runs:
//   row plan:    each output reduces its region on its own, pairwise (pairwise.h). Used when
//                the region's innermost stride is 1 (x.sum(-1)), or nothing else fits.
//   column plan: when the kept dims are innermost in memory (x.sum(0) of a row-major matrix),
//                blocks of up to 512 adjacent outputs are reduced together: whole rows of the
//                region are combined into a vector of partial results, pairwise over the rows,
//                so the inner loop runs over unit-stride columns and vectorises.
// Sums accumulate in the input's own type (float32 stays float32: pairwise, its error grows like
// log2(n) eps rather than n eps). Work is divided over outputs (or, for a single long row, over
// fixed pairwise subtrees), never over the order of operations inside one output, so results
// do not depend on the thread count.

#include <algorithm>
#include <vector>

#include "backends/bfloat16_widening.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/pairwise.h"
#include "backends/cpu/strided_loop.h"
#include "backends/dtype_dispatch.h"

namespace normgrad::backend::cpu {

namespace {

constexpr std::int64_t column_block = 512;
// Below this many adjacent outputs the column plan's vectors are too short to pay off.
constexpr std::int64_t min_column_width = 16;

struct ReducePlan {
  StridedLayout<2> kept;    // operands (out, in) over the kept dims
  StridedLayout<1> region;  // operand in over the reduced dims, innermost stride smallest
};

// Byte offset of element `index` of the region from its first element.
inline std::int64_t region_offset(const StridedLayout<1>& region, std::int64_t index) {
  if (region.rank == 1) return index * region.byte_strides[0][0];
  return offsets_of(region, index)[0];
}

// Reduces the whole region that starts at `first`; the region has at least one element.
template <typename Combine, typename T>
T reduce_region(const char* first, const StridedLayout<1>& region, bool may_fork) {
  const T* x = reinterpret_cast<const T*>(first);
  if (region.rank == 0) return x[0];
  const std::int64_t row_size = region.sizes[region.rank - 1];
  const std::int64_t stride = region.inner_strides[0];
  if (region.rank == 1)
    return may_fork ? reduce_row_parallel<Combine>(x, row_size, stride)
                    : reduce_row<Combine>(x, row_size, stride);
  // Several rows that do not merge: pairwise over rows of pairwise row results.
  const auto reduce_rows = [&](auto& self, std::int64_t begin, std::int64_t end) -> T {
    if (end - begin <= 8) {
      T result = reduce_row<Combine>(
          reinterpret_cast<const T*>(first + offsets_of(region, begin * row_size)[0]), row_size,
          stride);
      for (std::int64_t r = begin + 1; r < end; ++r)
        result = Combine::combine(
            result, reduce_row<Combine>(
                        reinterpret_cast<const T*>(first + offsets_of(region, r * row_size)[0]),
                        row_size, stride));
      return result;
    }
    const std::int64_t middle = begin + (end - begin) / 2;
    const T left = self(self, begin, middle);
    return Combine::combine(left, self(self, middle, end));
  };
  return reduce_rows(reduce_rows, 0, region.numel / row_size);
}

// out = finish(reduce(region)) for every output, each on its own.
template <typename Combine, typename T, typename Finish>
void row_plan(const ReducePlan& plan, const TensorRef& out, const TensorRef& in, Finish finish) {
  const std::int64_t outputs = plan.kept.numel;
  // Many outputs: threads take whole outputs. Few: each output forks over its subtrees.
  const bool fork_inside = outputs < omp_get_max_threads();
  const auto kernel = [&](const std::array<char*, 2>& pointers, const std::int64_t* strides,
                          std::int64_t count, std::int64_t) {
    T* o = reinterpret_cast<T*>(pointers[0]);
    for (std::int64_t i = 0; i < count; ++i)
      o[i * strides[0]] = finish(reduce_region<Combine, T>(
          pointers[1] + i * strides[1] * std::int64_t{sizeof(T)}, plan.region, fork_inside));
  };
  const std::array<char*, 2> base{static_cast<char*>(out.data), static_cast<char*>(in.data)};
  if (fork_inside) {
    walk_range(plan.kept, base, 0, outputs, kernel);
  } else {
    parallel_for(outputs, plan.region.numel, [&](std::int64_t begin, std::int64_t end) {
      walk_range(plan.kept, base, begin, end, kernel);
    });
  }
}

// Combines rows [begin, end) of the region, each `width` unit-stride columns from `first`,
// into result[0, width); scratch holds one vector per recursion level below this one.
template <typename Combine, typename T>
void combine_rows(const char* first, const StridedLayout<1>& region, std::int64_t begin,
                  std::int64_t end, std::int64_t width, T* result, T* scratch) {
  if (end - begin <= 8) {
    const T* rows[8];
    for (std::int64_t r = begin; r < end; ++r)
      rows[r - begin] = reinterpret_cast<const T*>(first + region_offset(region, r));
    if (end - begin == 8) {  // one pass over eight rows: eight streams in flight at once
#pragma omp simd
      for (std::int64_t j = 0; j < width; ++j) {
        T value = Combine::combine(rows[0][j], rows[1][j]);
        value = Combine::combine(value, rows[2][j]);
        value = Combine::combine(value, rows[3][j]);
        value = Combine::combine(value, rows[4][j]);
        value = Combine::combine(value, rows[5][j]);
        value = Combine::combine(value, rows[6][j]);
        result[j] = Combine::combine(value, rows[7][j]);
      }
      return;
    }
    std::copy(rows[0], rows[0] + width, result);
    for (std::int64_t r = 1; r < end - begin; ++r) {
#pragma omp simd
      for (std::int64_t j = 0; j < width; ++j) result[j] = Combine::combine(result[j], rows[r][j]);
    }
    return;
  }
  const std::int64_t middle = begin + (end - begin) / 2;
  combine_rows<Combine>(first, region, begin, middle, width, result, scratch + width);
  combine_rows<Combine>(first, region, middle, end, width, scratch, scratch + width);
#pragma omp simd
  for (std::int64_t j = 0; j < width; ++j) result[j] = Combine::combine(result[j], scratch[j]);
}

template <typename Combine, typename T, typename Finish>
void column_plan(const ReducePlan& plan, const TensorRef& out, const TensorRef& in, Finish finish) {
  const std::int64_t columns = plan.kept.sizes[plan.kept.rank - 1];
  const std::int64_t out_stride = plan.kept.inner_strides[0];
  const std::int64_t blocks_per_row = (columns + column_block - 1) / column_block;
  const std::int64_t tasks = plan.kept.numel / columns * blocks_per_row;
  const std::int64_t rows = plan.region.numel;
  int levels = 1;  // recursion depth of combine_rows over `rows` rows, plus the result
  for (std::int64_t n = rows; n > 8; n = (n + 1) / 2) ++levels;
  parallel_for(
      tasks, rows * std::min(columns, column_block), [&](std::int64_t begin, std::int64_t end) {
        std::vector<T> buffers(static_cast<std::size_t>(levels + 1) * column_block);
        for (std::int64_t task = begin; task < end; ++task) {
          const std::int64_t line = task / blocks_per_row;
          const std::int64_t column = task % blocks_per_row * column_block;
          const std::int64_t width = std::min(column_block, columns - column);
          const auto offsets = offsets_of(plan.kept, line * columns);
          const char* first =
              static_cast<const char*>(in.data) + offsets[1] + column * std::int64_t{sizeof(T)};
          combine_rows<Combine>(first, plan.region, 0, rows, width, buffers.data(),
                                buffers.data() + width);
          T* o =
              reinterpret_cast<T*>(static_cast<char*>(out.data) + offsets[0]) + column * out_stride;
          for (std::int64_t j = 0; j < width; ++j) o[j * out_stride] = finish(buffers[j]);
        }
      });
}

template <typename Combine, typename T, typename Finish>
void reduce_values(const ReducePlan& plan, const TensorRef& out, const TensorRef& in,
                   Finish finish) {
  const bool column_fits = plan.kept.rank > 0 && plan.kept.inner_strides[1] == 1 &&
                           plan.kept.sizes[plan.kept.rank - 1] >= min_column_width &&
                           plan.region.rank > 0 && plan.region.inner_strides[0] != 1;
  if (column_fits)
    column_plan<Combine, T>(plan, out, in, finish);
  else
    row_plan<Combine, T>(plan, out, in, finish);
}

// ArgMax/ArgMin along one dim of size n and stride `stride` (elements): the first index of the
// extreme value, where a NaN counts as more extreme than any number.
template <typename T, bool is_max>
void arg_reduce(const ReducePlan& plan, const TensorRef& out, const TensorRef& in, std::int64_t n,
                std::int64_t stride) {
  const auto kernel = [&](const std::array<char*, 2>& pointers, const std::int64_t* strides,
                          std::int64_t count, std::int64_t) {
    auto* o = reinterpret_cast<std::int64_t*>(pointers[0]);
    for (std::int64_t i = 0; i < count; ++i) {
      const T* x = reinterpret_cast<const T*>(pointers[1]) + i * strides[1];
      T best = x[0];
      std::int64_t best_index = 0;
      for (std::int64_t k = 1; k < n; ++k) {
        const T value = x[k * stride];
        const bool better = is_max ? value > best : value < best;
        if (better || (value != value && best == best)) {
          best = value;
          best_index = k;
        }
      }
      o[i * strides[0]] = best_index;
    }
  };
  const std::array<char*, 2> base{static_cast<char*>(out.data), static_cast<char*>(in.data)};
  parallel_for(plan.kept.numel, n, [&](std::int64_t begin, std::int64_t end) {
    walk_range(plan.kept, base, begin, end, kernel);
  });
}

}  // namespace

void CpuBackend::reduce(ReduceOp op, const TensorRef& out, const TensorRef& in,
                        std::uint64_t reduced, double scale) {
  if (any_bfloat16({&out, &in})) {
    Float32Copies f(*this);
    reduce(op, f.output(out), f.input(in), reduced, scale);
    return f.finish();
  }
  const int rank = static_cast<int>(in.rank());
  std::uint64_t reduced_mask = 0;
  for (int d = 0; d < rank; ++d)
    if (((reduced >> d) & 1) || (out.shape[d] == 1 && in.shape[d] != 1)) reduced_mask |= 1ull << d;
  ReducePlan plan;
  plan.kept = make_layout<2>(in.shape.data(), rank, {operand(out), operand(in)}, "cpu reduce",
                             false, ~reduced_mask);
  plan.region =
      make_layout<1>(in.shape.data(), rank, {operand(in)}, "cpu reduce", false, reduced_mask);
  if (plan.kept.numel == 0) return;

  if (op == ReduceOp::ArgMax || op == ReduceOp::ArgMin) {
    NG_CHECK(out.dtype == DType::Int64, "cpu reduce", "argmax/argmin write int64, got ", out.dtype);
    NG_CHECK(plan.region.numel > 0, "cpu reduce", "argmax/argmin over an empty dim of shape ",
             in.shape);
    int dim = -1;  // the one reduced dim of size > 1; none means every index is 0
    for (int d = 0; d < rank; ++d) {
      if (!((reduced_mask >> d) & 1) || in.shape[d] == 1) continue;
      NG_CHECK(dim < 0, "cpu reduce", "argmax/argmin reduce a single dim, got several of shape ",
               in.shape);
      dim = d;
    }
    const std::int64_t n = dim < 0 ? 1 : in.shape[dim];
    const std::int64_t stride = dim < 0 ? 0 : in.strides[dim];
    dispatch_any(in.dtype, "cpu reduce", [&](auto tag) {
      using T = typename decltype(tag)::type;
      if (op == ReduceOp::ArgMax)
        arg_reduce<T, true>(plan, out, in, n, stride);
      else
        arg_reduce<T, false>(plan, out, in, n, stride);
    });
    return;
  }

  NG_CHECK(out.dtype == in.dtype, "cpu reduce", "out is ", out.dtype, " but in is ", in.dtype);
  if (plan.region.numel == 0) {
    NG_CHECK(op == ReduceOp::Sum, "cpu reduce", "max/min over an empty dim of shape ", in.shape);
    fill(out, 0.0);
    return;
  }
  dispatch_any(in.dtype, "cpu reduce", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto identity = [](T value) { return value; };
    switch (op) {
      case ReduceOp::Sum:
        if (scale == 1.0) return reduce_values<SumCombine<T>, T>(plan, out, in, identity);
        if constexpr (std::is_floating_point_v<T>) {
          const T typed_scale = static_cast<T>(scale);
          return reduce_values<SumCombine<T>, T>(plan, out, in,
                                                 [=](T sum) { return sum * typed_scale; });
        } else {
          return reduce_values<SumCombine<T>, T>(plan, out, in, [=](T sum) {
            return static_cast<T>(static_cast<double>(sum) * scale);
          });
        }
      case ReduceOp::Max:
        return reduce_values<MaxCombine<T>, T>(plan, out, in, identity);
      case ReduceOp::Min:
        return reduce_values<MinCombine<T>, T>(plan, out, in, identity);
      default:
        break;
    }
  });
}

}  // namespace normgrad::backend::cpu
