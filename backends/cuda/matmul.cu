// Batched matrix products through cuBLAS: out[..., m, n] (+)= sum_k a[..., m, k] b[..., k, n].
//
// cuBLAS is column-major: it reads a matrix with leading dimension ld as element (i, j) at
// i + j ld. Our matrices are row-major: element (i, j) at i ld + j. The memory of a row-major
// R x C matrix X is therefore, to cuBLAS, the column-major C x R matrix X^T. So instead of
// C = A B we ask cuBLAS for C^T = B^T A^T, which it writes column-major as n x m with ldc = n:
// exactly the row-major m x n matrix C. The call is
//   gemm(op_b, op_a, M = n, N = m, K = k, B, ld_b, A, ld_a, C, ldc = n)
// where op = N for a row-major operand (its memory already is the transpose cuBLAS wants) and
// op = T for a transposed view (element (i, j) at i + j ld: its memory is the matrix itself).
//
// Worked example: A 2x3, B 3x4, both row-major (ld 3 and 4), C 2x4 (ldc 4). The call is
// gemm(N, N, M = 4, N = 2, K = 3, B, 4, A, 3, C, 4). cuBLAS's first operand, B's memory with
// ld 4, is the 4x3 matrix whose (j, i) is B[i][j] = B^T; its second, A's memory with ld 3, is the
// 3x2 matrix whose (i, r) is A[r][i] = A^T; their 4x2 product (B^T A^T)(j, r) = sum_i B[i][j]
// A[r][i] = C[r][j] is stored at j + 4 r, which is where row-major C keeps C[r][j].
//
// Layouts. An operand whose last two dims are neither row-major nor a transposed view (e.g.
// broadcast rows, both strides > 1) is first copied by a small kernel into a contiguous Workspace
// buffer. Batch dims are simplified together (size-1 dims dropped, dims that are contiguous with
// each other in all three operands merged); one strided-batched call covers the last batch dim
// (a broadcast one has stride 0), and any remaining batch dims become a loop of such calls.
//
// Precision. float32 products use CUBLAS_COMPUTE_32F (full FP32) unless tf32_allowed(), which
// selects CUBLAS_COMPUTE_32F_FAST_TF32; the handle's math mode is set to match for each call.
// float64 uses CUBLAS_COMPUTE_64F. bfloat16 operands (CUDA_R_16BF) are multiplied with
// CUBLAS_COMPUTE_32F: products and sums in float32 on the tensor cores, the result rounded to
// bfloat16 once, or kept in float32 when out is float32 (a convolution's product, to which a
// bias is still to be added, or a weight gradient summed over chunks of samples).

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <type_traits>

#include "backends/cuda/launch.cuh"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/device_guard.h"
#include "backends/dtype_dispatch.h"
#include "base/error.h"

namespace normgrad::backend::cuda {

namespace {

constexpr std::int64_t max_batch_per_call = 65535;

// How cuBLAS can read a rows x cols matrix with the given strides: row-major (op N in the
// transposed product, see above) or a transposed view (op T). The stride of a dim of size 1
// never matters, so it is replaced by whatever value suits.
struct BlasOperand {
  bool transposed = false;
  std::int64_t leading_dim = 1;
  bool needs_copy = false;
};

BlasOperand blas_operand(std::int64_t rows, std::int64_t cols, std::int64_t row_stride,
                         std::int64_t col_stride) {
  const std::int64_t min_row_major_ld = std::max<std::int64_t>(cols, 1);
  const std::int64_t min_transposed_ld = std::max<std::int64_t>(rows, 1);
  if ((cols == 1 || col_stride == 1) && (rows == 1 || row_stride >= min_row_major_ld))
    return {false, rows == 1 ? min_row_major_ld : row_stride, false};
  if ((rows == 1 || row_stride == 1) && (cols == 1 || col_stride >= min_transposed_ld))
    return {true, cols == 1 ? min_transposed_ld : col_stride, false};
  return {false, min_row_major_ld, true};
}

// dst (contiguous, src's shape) = src, element by element.
template <typename T>
__global__ void copy_to_contiguous_kernel(T* dst, const T* src, std::int64_t count,
                                          const Indexer source) {
  NG_KERNEL_LOOP(i, count) dst[i] = src[source.offset(i)];
}

Strides contiguous_strides(const Shape& shape) {
  Strides strides(shape.size());
  std::int64_t stride = 1;
  for (std::size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= shape[d];
  }
  return strides;
}

// The view `operand` copied into `buffer`, returned as a contiguous view of the same shape.
template <typename T>
TensorRef copy_contiguous(const Context& context, const TensorRef& operand, void* buffer) {
  TensorRef dense = operand;
  dense.data = buffer;
  dense.strides = contiguous_strides(operand.shape);
  const TensorRef* operands[2] = {&dense, &operand};
  Indexer indexers[2];
  make_indexers(operands, indexers, "cuda matmul");
  const std::int64_t count = operand.numel();
  copy_to_contiguous_kernel<T><<<grid_for(count, context), threads_per_block, 0, context.stream>>>(
      static_cast<T*>(buffer), operand.ptr<const T>(), count, indexers[1]);
  NG_CUDA_CHECK_LAUNCH();
  return dense;
}

cublasOperation_t op_of(const BlasOperand& operand) {
  return operand.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
}

// a and b hold T, out holds Out (T, or float32 for bfloat16 operands).
template <typename T, typename Out = T>
void matmul_typed(const Context& context, const TensorRef& out, TensorRef a, TensorRef b,
                  bool accumulate) {
  const int rank = static_cast<int>(out.rank());
  const std::int64_t m = out.shape[rank - 2], n = out.shape[rank - 1], k = a.shape[rank - 1];
  const auto stride = [rank](const TensorRef& t, int from_end) {
    return t.strides[rank - from_end];
  };
  BlasOperand layout_a = blas_operand(m, k, stride(a, 2), stride(a, 1));
  BlasOperand layout_b = blas_operand(k, n, stride(b, 2), stride(b, 1));
  Workspace scratch_a(context, layout_a.needs_copy ? a.numel() * sizeof(T) : 0);
  Workspace scratch_b(context, layout_b.needs_copy ? b.numel() * sizeof(T) : 0);
  if (layout_a.needs_copy) {
    a = copy_contiguous<T>(context, a, scratch_a.data());
    layout_a = blas_operand(m, k, stride(a, 2), stride(a, 1));
  }
  if (layout_b.needs_copy) {
    b = copy_contiguous<T>(context, b, scratch_b.data());
    layout_b = blas_operand(k, n, stride(b, 2), stride(b, 1));
  }
  for (const std::int64_t extent : {m, n, k, layout_a.leading_dim, layout_b.leading_dim})
    NG_CHECK(extent <= INT_MAX, "cuda matmul", "matrix extent ", extent,
             " exceeds the cuBLAS index range");

  // The batch dims of the three operands, simplified together.
  TensorRef batch_views[3] = {out, a, b};
  for (TensorRef& view : batch_views) {
    view.shape.resize(static_cast<std::size_t>(rank - 2));
    view.strides.resize(static_cast<std::size_t>(rank - 2));
  }
  const TensorRef* operands[3] = {&batch_views[0], &batch_views[1], &batch_views[2]};
  Indexer batches[3];
  make_indexers(operands, batches, "cuda matmul");
  const int batch_rank = batches[0].rank;
  // The last batch dim goes to one strided-batched call; the dims before it are looped over.
  const std::int64_t inner = batch_rank > 0 ? batches[0].sizes[batch_rank - 1] : 1;
  const std::int64_t inner_strides[3] = {batch_rank > 0 ? batches[0].strides[batch_rank - 1] : 0,
                                         batch_rank > 0 ? batches[1].strides[batch_rank - 1] : 0,
                                         batch_rank > 0 ? batches[2].strides[batch_rank - 1] : 0};
  Indexer outer[3];
  std::int64_t outer_count = 1;
  for (int i = 0; i < 3; ++i) {
    outer[i].rank = std::max(batch_rank - 1, 0);
    for (int d = 0; d < outer[i].rank; ++d) {
      outer[i].sizes[d] = batches[i].sizes[d];
      outer[i].strides[d] = batches[i].strides[d];
    }
  }
  for (int d = 0; d < outer[0].rank; ++d) outer_count *= outer[0].sizes[d];

  const bool tf32 = std::is_same_v<T, float> && tf32_allowed();
  NG_CUBLAS_CHECK(
      cublasSetMathMode(context.blas, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  const auto data_type = [](auto tag) {
    using V = typename decltype(tag)::type;
    return std::is_same_v<V, float> ? CUDA_R_32F : std::is_same_v<V, double> ? CUDA_R_64F
                                                                             : CUDA_R_16BF;
  };
  const cudaDataType_t type = data_type(TypeTag<T>{}), out_type = data_type(TypeTag<Out>{});
  const cublasComputeType_t compute = std::is_same_v<T, double> ? CUBLAS_COMPUTE_64F
                                      : tf32                    ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                                : CUBLAS_COMPUTE_32F;
  // alpha and beta have the compute type's precision.
  using Scale = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const Scale alpha = 1, beta = accumulate ? 1 : 0;
  for (std::int64_t index = 0; index < outer_count; ++index) {
    Out* c = out.ptr<Out>() + outer[0].offset(index);
    const T* a_base = a.ptr<const T>() + outer[1].offset(index);
    const T* b_base = b.ptr<const T>() + outer[2].offset(index);
    for (std::int64_t first = 0; first < inner; first += max_batch_per_call) {
      const std::int64_t count = std::min(max_batch_per_call, inner - first);
      // C^T (n x m, ldc = n) = op(B memory) op(A memory): see the file comment.
      NG_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
          context.blas, op_of(layout_b), op_of(layout_a), static_cast<int>(n), static_cast<int>(m),
          static_cast<int>(k), &alpha, b_base + first * inner_strides[2], type,
          static_cast<int>(layout_b.leading_dim), static_cast<long long>(inner_strides[2]),
          a_base + first * inner_strides[1], type, static_cast<int>(layout_a.leading_dim),
          static_cast<long long>(inner_strides[1]), &beta, c + first * inner_strides[0], out_type,
          static_cast<int>(std::max<std::int64_t>(n, 1)), static_cast<long long>(inner_strides[0]),
          static_cast<int>(count), compute, CUBLAS_GEMM_DEFAULT));
    }
  }
}

}  // namespace

void CudaBackend::matmul(const TensorRef& out, const TensorRef& a, const TensorRef& b,
                         bool accumulate) {
  DeviceGuard guard(context_.device);
  const Context& context = context_;
  const char* op = "cuda matmul";
  NG_CHECK(out.rank() >= 2 && a.rank() == out.rank() && b.rank() == out.rank(), op,
           "needs operands of one rank >= 2, got out ", out.shape, ", a ", a.shape, ", b ",
           b.shape);
  const bool float32_sums = out.dtype == DType::Float32 && a.dtype == DType::BFloat16;
  NG_CHECK(a.dtype == b.dtype && (out.dtype == a.dtype || float32_sums), op, "dtypes differ: out ",
           out.dtype, ", a ", a.dtype, ", b ", b.dtype,
           " (out may be float32 for bfloat16 operands, else all three share a dtype)");
  NG_CHECK(out.dtype != DType::Int64, op,
           "int64 matrix products are not supported; convert to a float dtype");
  NG_CHECK(is_contiguous(out), op, "out must be contiguous, got strides ", out.strides,
           " for shape ", out.shape);
  if (out.numel() == 0) return;      // m = 0, n = 0 or an empty batch
  if (a.shape[a.rank() - 1] == 0) {  // k = 0: the empty sum is 0
    if (!accumulate)
      NG_CUDA_CHECK(
          cudaMemsetAsync(out.data, 0, out.numel() * element_size(out.dtype), context.stream));
    return;
  }
  if (float32_sums) return matmul_typed<bfloat16, float>(context, out, a, b, accumulate);
  switch (out.dtype) {
    case DType::Float32:
      return matmul_typed<float>(context, out, a, b, accumulate);
    case DType::BFloat16:
      return matmul_typed<bfloat16>(context, out, a, b, accumulate);
    default:
      return matmul_typed<double>(context, out, a, b, accumulate);
  }
}

}  // namespace normgrad::backend::cuda
