// Indexing along one dim: index_select and gather read through an int64 index; index_add and
// scatter_add accumulate through one. The first two move elements by their size, bfloat16
// included; the accumulating ones sum bfloat16 in float32 (bfloat16_widening.h).
//
// Determinism of the accumulating kernels: two source elements can only land on the same
// output element when they differ in the indexed position alone. So the work is split over
// the other dims (each thread owns a set of output lines outright) and, within a line, sources
// are added in increasing index order, with no atomics: the result is the same as a serial
// loop's for any thread count.

#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/bfloat16_widening.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/elementwise_math.h"
#include "backends/cpu/strided_loop.h"
#include "backends/dtype_dispatch.h"

namespace normgrad::backend::cpu {

namespace {

// Elements of the accumulating kernels' inner dims handled per task.
constexpr std::int64_t accumulate_chunk = 4096;

std::uint64_t dims_before(int dim) { return (1ull << dim) - 1; }
std::uint64_t dims_after(int dim) { return ~((1ull << (dim + 1)) - 1); }

template <typename T>
void copy_rows(const StridedLayout<2>& layout, const std::array<char*, 2>& base, std::int64_t begin,
               std::int64_t end) {
  const auto kernel = [](const std::array<char*, 2>& pointers, const std::int64_t* strides,
                         std::int64_t count, std::int64_t) {
    if (strides[0] == 1 && strides[1] == 1) {
      std::memcpy(pointers[0], pointers[1], count * sizeof(T));
      return;
    }
    unary_row<T, T>(pointers[0], pointers[1], strides[0], strides[1], count, [](T x) { return x; });
  };
  walk_range(layout, base, begin, end, kernel);
}

template <typename T>
void add_rows(const StridedLayout<2>& layout, const std::array<char*, 2>& base, std::int64_t begin,
              std::int64_t end) {
  const auto kernel = [](const std::array<char*, 2>& pointers, const std::int64_t* strides,
                         std::int64_t count, std::int64_t) {
    binary_row<T, T, T>(pointers[0], pointers[0], pointers[1],
                        std::array<std::int64_t, 3>{strides[0], strides[0], strides[1]}.data(),
                        count, [](T a, T b) { return add_values(a, b); });
  };
  walk_range(layout, base, begin, end, kernel);
}

// The dim's index entry i, from a 1-d int64 index of any stride.
inline std::int64_t index_at(const TensorRef& index, std::int64_t i) {
  return index.ptr<const std::int64_t>()[index.rank() == 0 ? 0 : i * index.strides[0]];
}

}  // namespace

void CpuBackend::index_select(const TensorRef& out, const TensorRef& in, int dim,
                              const TensorRef& index) {
  NG_CHECK(out.dtype == in.dtype, "cpu index_select", "out is ", out.dtype, " but in is ",
           in.dtype);
  const int rank = static_cast<int>(out.rank());
  const std::array<Operand, 2> operands{operand(out), operand(in)};
  const auto outer =
      make_layout<2>(out.shape.data(), rank, operands, "cpu index_select", true, dims_before(dim));
  const auto inner =
      make_layout<2>(out.shape.data(), rank, operands, "cpu index_select", true, dims_after(dim));
  const std::int64_t count = rank == 0 ? 1 : out.shape[dim];
  const std::int64_t out_step = rank == 0 ? 0 : out.strides[dim] * operands[0].element_size;
  const std::int64_t in_step = rank == 0 ? 0 : in.strides[dim] * operands[1].element_size;
  const std::int64_t tasks = outer.numel * count;
  if (tasks == 0 || inner.numel == 0) return;
  dispatch_bits(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto slice = [&](std::int64_t task) {
      const auto offsets = offsets_of(outer, task / count);
      const std::int64_t i = task % count;
      return std::array<char*, 2>{operands[0].data + offsets[0] + i * out_step,
                                  operands[1].data + offsets[1] + index_at(index, i) * in_step};
    };
    if (tasks >= omp_get_max_threads()) {
      parallel_for(tasks, inner.numel, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t task = begin; task < end; ++task)
          copy_rows<T>(inner, slice(task), 0, inner.numel);
      });
    } else {
      for (std::int64_t task = 0; task < tasks; ++task) {
        const auto base = slice(task);
        parallel_for(inner.numel, 1, [&](std::int64_t begin, std::int64_t end) {
          copy_rows<T>(inner, base, begin, end);
        });
      }
    }
  });
}

void CpuBackend::index_add(const TensorRef& out, int dim, const TensorRef& index,
                           const TensorRef& src) {
  NG_CHECK(out.dtype == src.dtype, "cpu index_add", "out is ", out.dtype, " but src is ",
           src.dtype);
  if (any_bfloat16({&out, &src})) {
    Float32Copies f(*this);
    index_add(f.update(out), dim, index, f.input(src));
    return f.finish();
  }
  const int rank = static_cast<int>(src.rank());
  const std::array<Operand, 2> operands{operand(out), operand(src)};
  const auto outer =
      make_layout<2>(src.shape.data(), rank, operands, "cpu index_add", true, dims_before(dim));
  const auto inner =
      make_layout<2>(src.shape.data(), rank, operands, "cpu index_add", true, dims_after(dim));
  const std::int64_t count = rank == 0 ? 1 : src.shape[dim];
  const std::int64_t out_step = rank == 0 ? 0 : out.strides[dim] * operands[0].element_size;
  const std::int64_t src_step = rank == 0 ? 0 : src.strides[dim] * operands[1].element_size;
  const std::int64_t chunks = (inner.numel + accumulate_chunk - 1) / accumulate_chunk;
  const std::int64_t tasks = outer.numel * chunks;
  if (tasks == 0 || count == 0) return;
  dispatch_any(out.dtype, "cpu index_add", [&](auto tag) {
    using T = typename decltype(tag)::type;
    // A task owns one outer position and one chunk of the inner dims, for every index entry.
    parallel_for(tasks, count * std::min(inner.numel, accumulate_chunk),
                 [&](std::int64_t begin, std::int64_t end) {
                   for (std::int64_t task = begin; task < end; ++task) {
                     const auto offsets = offsets_of(outer, task / chunks);
                     const std::int64_t first = task % chunks * accumulate_chunk;
                     const std::int64_t last = std::min(first + accumulate_chunk, inner.numel);
                     for (std::int64_t i = 0; i < count; ++i) {
                       const std::array<char*, 2> base{
                           operands[0].data + offsets[0] + index_at(index, i) * out_step,
                           operands[1].data + offsets[1] + i * src_step};
                       add_rows<T>(inner, base, first, last);
                     }
                   }
                 });
  });
}

void CpuBackend::gather(const TensorRef& out, const TensorRef& in, int dim,
                        const TensorRef& index) {
  NG_CHECK(out.dtype == in.dtype, "cpu gather", "out is ", out.dtype, " but in is ", in.dtype);
  const int rank = static_cast<int>(out.rank());
  // in is read at its own strides, except along dim, where the index supplies the position.
  Strides in_strides = in.strides;
  const std::int64_t in_dim_stride = rank == 0 ? 0 : in.strides[dim];
  if (rank > 0) in_strides[dim] = 0;
  const std::array<Operand, 3> operands{
      operand(out), operand(index),
      Operand{operand(in).data, operand(in).element_size, in_strides.data()}};
  const auto layout = make_layout<3>(out.shape.data(), rank, operands, "cpu gather");
  dispatch_bits(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    run_layout(layout, {operands[0].data, operands[1].data, operands[2].data},
               [&](const std::array<char*, 3>& pointers, const std::int64_t* strides,
                   std::int64_t n, std::int64_t) {
                 T* o = reinterpret_cast<T*>(pointers[0]);
                 const auto* idx = reinterpret_cast<const std::int64_t*>(pointers[1]);
                 const T* x = reinterpret_cast<const T*>(pointers[2]);
                 for (std::int64_t t = 0; t < n; ++t)
                   o[t * strides[0]] = x[t * strides[2] + idx[t * strides[1]] * in_dim_stride];
               });
  });
}

void CpuBackend::scatter_add(const TensorRef& out, int dim, const TensorRef& index,
                             const TensorRef& src) {
  NG_CHECK(out.dtype == src.dtype, "cpu scatter_add", "out is ", out.dtype, " but src is ",
           src.dtype);
  if (any_bfloat16({&out, &src})) {
    Float32Copies f(*this);
    scatter_add(f.update(out), dim, index, f.input(src));
    return f.finish();
  }
  const int rank = static_cast<int>(index.rank());
  const std::array<Operand, 3> operands{operand(out), operand(index), operand(src)};
  // Positions over every dim but `dim`; along `dim`, j runs in order inside each position.
  const auto positions =
      make_layout<3>(index.shape.data(), rank, operands, "cpu scatter_add", false, ~(1ull << dim));
  const std::int64_t count = rank == 0 ? 1 : index.shape[dim];
  const std::int64_t out_dim_stride = rank == 0 ? 0 : out.strides[dim];
  const std::int64_t index_step = rank == 0 ? 0 : index.strides[dim] * operands[1].element_size;
  const std::int64_t src_step = rank == 0 ? 0 : src.strides[dim] * operands[2].element_size;
  if (positions.numel == 0 || count == 0) return;
  dispatch_any(out.dtype, "cpu scatter_add", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto kernel = [&](const std::array<char*, 3>& pointers, const std::int64_t* strides,
                            std::int64_t n, std::int64_t) {
      T* o = reinterpret_cast<T*>(pointers[0]);
      const auto* idx = reinterpret_cast<const std::int64_t*>(pointers[1]);
      const T* x = reinterpret_cast<const T*>(pointers[2]);
      for (std::int64_t t = 0; t < n; ++t) {
        T& target = o[t * strides[0] + idx[t * strides[1]] * out_dim_stride];
        target = add_values(target, x[t * strides[2]]);
      }
    };
    parallel_for(positions.numel, count, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t first = begin; first < end; first += accumulate_chunk) {
        const std::int64_t last = std::min(first + accumulate_chunk, end);
        for (std::int64_t j = 0; j < count; ++j)
          walk_range(positions,
                     {operands[0].data, operands[1].data + j * index_step,
                      operands[2].data + j * src_step},
                     first, last, kernel);
      }
    });
  });
}

}  // namespace normgrad::backend::cpu
