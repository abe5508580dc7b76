// Matrix products: out[..., m, n] (+)= sum_k a[..., m, k] b[..., k, n].
//
// BLAS reads a matrix either row-major (element (i, j) at i*ld + j, ld >= cols: NoTrans) or
// as the transpose of a row-major matrix (element (i, j) at i + j*ld, ld >= rows: Trans).
// Each operand's last two strides pick one of the two; any other layout (broadcast rows,
// strides that are both > 1, negative strides) is first copied into a row-major scratch
// matrix. Batch dims (any number, stride 0 where broadcast) become one gemm call each; a
// stack of small products is shared among the threads whole, one product per thread at a time.
// Large float32 products go to normgrad's own GEMM, with AVX-512 on CPUs that have it
// (sgemm_avx512.h says why) and with AVX2 on the other x86-64 CPUs (sgemm_avx2.h), the rest
// to OpenBLAS, single-threaded, in blocks of C that normgrad's threads share
// (blocked_blas_gemm says why); tiny products (fewer than 2^15 multiply-adds) are plain
// loops. The path depends on the shape alone, and each gives a product the same bits at any
// thread count.

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <climits>
#include <type_traits>
#include <vector>

#include "backends/bfloat16_widening.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/gemm/sgemm_avx2.h"
#include "backends/cpu/gemm/sgemm_avx512.h"
#include "backends/cpu/row_kernel.h"
#include "backends/cpu/strided_loop.h"

namespace normgrad::backend::cpu {

namespace {

struct BlasMatrix {
  CBLAS_TRANSPOSE transpose = CblasNoTrans;
  std::int64_t leading_dim = 1;
  bool needs_copy = false;
};

// How BLAS can read a rows x cols matrix with the given strides. The stride of a dim of size 1
// never matters, so it is replaced by whatever value suits.
BlasMatrix blas_matrix(std::int64_t rows, std::int64_t cols, std::int64_t row_stride,
                       std::int64_t col_stride) {
  const std::int64_t min_row_major_ld = std::max<std::int64_t>(cols, 1);
  const std::int64_t min_transposed_ld = std::max<std::int64_t>(rows, 1);
  if ((cols == 1 || col_stride == 1) && (rows == 1 || row_stride >= min_row_major_ld))
    return {CblasNoTrans, rows == 1 ? min_row_major_ld : row_stride, false};
  if ((rows == 1 || row_stride == 1) && (cols == 1 || col_stride >= min_transposed_ld))
    return {CblasTrans, cols == 1 ? min_transposed_ld : col_stride, false};
  return {CblasNoTrans, min_row_major_ld, true};
}

// Copies a strided rows x cols matrix into row-major `dst`, or back with `to_strided`.
template <typename T>
void copy_matrix(T* dense, T* strided, std::int64_t rows, std::int64_t cols,
                 std::int64_t row_stride, std::int64_t col_stride, bool to_strided) {
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      T& element = strided[i * row_stride + j * col_stride];
      if (to_strided)
        element = dense[i * cols + j];
      else
        dense[i * cols + j] = element;
    }
}

// A BLAS operand as strides: row-major, or the transpose of a row-major matrix.
StridedMatrix strided(CBLAS_TRANSPOSE transpose, const float* data, std::int64_t leading_dim) {
  return transpose == CblasNoTrans ? StridedMatrix{data, leading_dim, 1}
                                   : StridedMatrix{data, 1, leading_dim};
}

// OpenBLAS's OpenMP build takes as many threads as OpenMP offers outside a parallel region
// (and one inside it), whatever openblas_set_num_threads said. A call made outside one is
// given a single thread for its duration: OpenMP's count is the calling thread's own setting.
class OneBlasThread {
 public:
  OneBlasThread() : threads_(omp_in_parallel() ? 0 : omp_get_max_threads()) {
    if (threads_ > 1) omp_set_num_threads(1);
  }
  ~OneBlasThread() {
    if (threads_ > 1) omp_set_num_threads(threads_);
  }
  OneBlasThread(const OneBlasThread&) = delete;
  OneBlasThread& operator=(const OneBlasThread&) = delete;

 private:
  int threads_;
};

// One cblas_sgemm or cblas_dgemm call on a single thread: c = a b + beta c.
template <typename T>
void blas_gemm(CBLAS_TRANSPOSE transpose_a, CBLAS_TRANSPOSE transpose_b, std::int64_t m,
               std::int64_t n, std::int64_t k, const T* a, std::int64_t lda, const T* b,
               std::int64_t ldb, T beta, T* c, std::int64_t ldc) {
  const OneBlasThread one_thread;
  const auto M = static_cast<blasint>(m), N = static_cast<blasint>(n), K = static_cast<blasint>(k);
  const auto lda_ = static_cast<blasint>(lda), ldb_ = static_cast<blasint>(ldb),
             ldc_ = static_cast<blasint>(ldc);
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, transpose_a, transpose_b, M, N, K, 1.0f, a, lda_, b, ldb_, beta, c,
                ldc_);
  else
    cblas_dgemm(CblasRowMajor, transpose_a, transpose_b, M, N, K, 1.0, a, lda_, b, ldb_, beta, c,
                ldc_);
}

// The rows or columns of C that one BLAS call computes.
constexpr std::int64_t blas_block = 128;

// Products of fewer multiply-adds (m n k) are too small to share among threads one by one;
// a stack of them is shared out whole instead (matmul_typed).
constexpr std::int64_t small_product = std::int64_t{1} << 20;

// A product through OpenBLAS, with the same bits at any thread count. OpenBLAS's own threads
// divide a product by the thread count, and for some shapes (few rows, or a long inner
// dimension) that changes the order of its sums: a batch-4 product differed between 1 and 2
// threads. So OpenBLAS runs single-threaded (OneBlasThread), and C is cut here into blocks
// of blas_block columns (or rows, when it has more rows than columns), whose boundaries
// depend on the shape alone; threads take whole blocks, and each block is one
// single-threaded call whoever makes it.
template <typename T>
void blocked_blas_gemm(CBLAS_TRANSPOSE transpose_a, CBLAS_TRANSPOSE transpose_b, std::int64_t m,
                       std::int64_t n, std::int64_t k, const T* a, std::int64_t lda, const T* b,
                       std::int64_t ldb, T beta, T* c, std::int64_t ldc) {
  const bool by_columns = n >= m;
  const std::int64_t extent = by_columns ? n : m;
  const std::int64_t blocks = (extent + blas_block - 1) / blas_block;
  parallel_for(blocks, blas_block * k * (by_columns ? m : n) / macs_per_element,
               [&](std::int64_t begin, std::int64_t end) {
                 for (std::int64_t block = begin; block < end; ++block) {
                   const std::int64_t first = block * blas_block;
                   const std::int64_t size = std::min(blas_block, extent - first);
                   if (by_columns) {  // columns [first, first + size) of B and C
                     const T* b_block = b + (transpose_b == CblasNoTrans ? first : first * ldb);
                     blas_gemm(transpose_a, transpose_b, m, size, k, a, lda, b_block, ldb, beta,
                               c + first, ldc);
                   } else {  // rows [first, first + size) of A and C
                     const T* a_block = a + (transpose_a == CblasNoTrans ? first * lda : first);
                     blas_gemm(transpose_a, transpose_b, size, n, k, a_block, lda, b, ldb, beta,
                               c + first * ldc, ldc);
                   }
                 }
               });
}

// Products of fewer multiply-adds than this are plain loops (small_gemm): a BLAS call costs
// more to set up (and to zero C for) than an attention step's products of one row, one
// column or one term take to compute.
constexpr std::int64_t tiny_product = std::int64_t{1} << 15;

// c = a b + beta c (beta 0 or 1) on one thread, in plain loops: a row of C gathers a[i, p]
// times row p of B for p = 0, 1, ...; a transposed B gives each element a dot product.
template <typename T>
inline void small_gemm_loops(CBLAS_TRANSPOSE transpose_a, CBLAS_TRANSPOSE transpose_b,
                             std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
                             std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c,
                             std::int64_t ldc) {
  const auto a_at = [&](std::int64_t i, std::int64_t p) {
    return transpose_a == CblasNoTrans ? a[i * lda + p] : a[p * lda + i];
  };
  for (std::int64_t i = 0; i < m; ++i) {
    T* row = c + i * ldc;
    if (beta == T{0})
      for (std::int64_t j = 0; j < n; ++j) row[j] = T{0};
    if (transpose_b == CblasNoTrans) {
      for (std::int64_t p = 0; p < k; ++p) {
        const T scale = a_at(i, p);
        const T* b_row = b + p * ldb;
        for (std::int64_t j = 0; j < n; ++j) row[j] += scale * b_row[j];
      }
    } else {
      for (std::int64_t j = 0; j < n; ++j) {
        // Eight running sums, one per term modulo 8, added pairwise at the end: one vector
        // register instead of a chain of dependent additions.
        const T* b_column = b + j * ldb;
        T lanes[8] = {};
        std::int64_t p = 0;
        for (; p + 8 <= k; p += 8)
          for (std::int64_t lane = 0; lane < 8; ++lane)
            lanes[lane] += a_at(i, p + lane) * b_column[p + lane];
        T sum = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
                ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
        for (; p < k; ++p) sum += a_at(i, p) * b_column[p];
        row[j] += sum;
      }
    }
  }
}

// The loops above, compiled for AVX2 and for baseline x86-64 (row_kernel.h).
NORMGRAD_ROW_KERNEL void small_gemm(CBLAS_TRANSPOSE transpose_a, CBLAS_TRANSPOSE transpose_b,
                                    std::int64_t m, std::int64_t n, std::int64_t k, const float* a,
                                    std::int64_t lda, const float* b, std::int64_t ldb, float beta,
                                    float* c, std::int64_t ldc) {
  small_gemm_loops(transpose_a, transpose_b, m, n, k, a, lda, b, ldb, beta, c, ldc);
}

NORMGRAD_ROW_KERNEL void small_gemm(CBLAS_TRANSPOSE transpose_a, CBLAS_TRANSPOSE transpose_b,
                                    std::int64_t m, std::int64_t n, std::int64_t k, const double* a,
                                    std::int64_t lda, const double* b, std::int64_t ldb,
                                    double beta, double* c, std::int64_t ldc) {
  small_gemm_loops(transpose_a, transpose_b, m, n, k, a, lda, b, ldb, beta, c, ldc);
}

void gemm(CBLAS_TRANSPOSE transpose_a, CBLAS_TRANSPOSE transpose_b, std::int64_t m, std::int64_t n,
          std::int64_t k, const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
          float beta, float* c, std::int64_t ldc) {
  if (m * n * k < tiny_product) {
    small_gemm(transpose_a, transpose_b, m, n, k, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  static const SimdGemm* const simd = avx512_gemm() != nullptr ? avx512_gemm() : avx2_gemm();
  if (simd != nullptr && simd->suits(m, n, k)) {
    simd->gemm(m, n, k, strided(transpose_a, a, lda), strided(transpose_b, b, ldb), c, ldc,
               beta != 0.0f);
    return;
  }
  blocked_blas_gemm(transpose_a, transpose_b, m, n, k, a, lda, b, ldb, beta, c, ldc);
}

void gemm(CBLAS_TRANSPOSE transpose_a, CBLAS_TRANSPOSE transpose_b, std::int64_t m, std::int64_t n,
          std::int64_t k, const double* a, std::int64_t lda, const double* b, std::int64_t ldb,
          double beta, double* c, std::int64_t ldc) {
  if (m * n * k < tiny_product) {
    small_gemm(transpose_a, transpose_b, m, n, k, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  blocked_blas_gemm(transpose_a, transpose_b, m, n, k, a, lda, b, ldb, beta, c, ldc);
}

template <typename T>
void matmul_typed(const TensorRef& out, const TensorRef& a, const TensorRef& b, bool accumulate) {
  const int rank = static_cast<int>(out.rank());
  const std::int64_t m = out.shape[rank - 2], n = out.shape[rank - 1], k = a.shape[rank - 1];
  const auto stride = [rank](const TensorRef& t, int from_end) {
    return t.strides[rank - from_end];
  };
  const BlasMatrix layout_a = blas_matrix(m, k, stride(a, 2), stride(a, 1));
  const BlasMatrix layout_b = blas_matrix(k, n, stride(b, 2), stride(b, 1));
  BlasMatrix layout_c = blas_matrix(m, n, stride(out, 2), stride(out, 1));
  if (layout_c.transpose != CblasNoTrans)
    layout_c = {CblasNoTrans, std::max<std::int64_t>(n, 1), true};
  for (const std::int64_t extent :
       {m, n, k, layout_a.leading_dim, layout_b.leading_dim, layout_c.leading_dim})
    NG_CHECK(extent <= INT_MAX, "cpu matmul", "matrix extent ", extent,
             " exceeds the BLAS index range");

  // One gemm per batch index; the batch dims are every dim but the last two.
  const std::uint64_t batch_dims = rank > 2 ? (1ull << (rank - 2)) - 1 : 0;
  const auto batches =
      make_layout<3>(out.shape.data(), rank, {operand(out), operand(a), operand(b)}, "cpu matmul",
                     true, batch_dims);
  const auto run_batches = [&](std::int64_t first, std::int64_t last) {
    std::vector<T> scratch_a(layout_a.needs_copy ? m * k : 0);
    std::vector<T> scratch_b(layout_b.needs_copy ? k * n : 0);
    std::vector<T> scratch_c(layout_c.needs_copy ? m * n : 0);
    for (std::int64_t batch = first; batch < last; ++batch) {
      const auto offsets = offsets_of(batches, batch);
      T* c = reinterpret_cast<T*>(static_cast<char*>(out.data) + offsets[0]);
      T* a_matrix = reinterpret_cast<T*>(static_cast<char*>(a.data) + offsets[1]);
      T* b_matrix = reinterpret_cast<T*>(static_cast<char*>(b.data) + offsets[2]);
      if (layout_a.needs_copy) {
        copy_matrix(scratch_a.data(), a_matrix, m, k, stride(a, 2), stride(a, 1), false);
        a_matrix = scratch_a.data();
      }
      if (layout_b.needs_copy) {
        copy_matrix(scratch_b.data(), b_matrix, k, n, stride(b, 2), stride(b, 1), false);
        b_matrix = scratch_b.data();
      }
      T* c_matrix = c;
      if (layout_c.needs_copy) {
        if (accumulate)
          copy_matrix(scratch_c.data(), c, m, n, stride(out, 2), stride(out, 1), false);
        c_matrix = scratch_c.data();
      }
      gemm(layout_a.transpose, layout_b.transpose, m, n, k, a_matrix, layout_a.leading_dim,
           b_matrix, layout_b.leading_dim, accumulate ? T{1} : T{0}, c_matrix,
           layout_c.leading_dim);
      if (layout_c.needs_copy)
        copy_matrix(scratch_c.data(), c, m, n, stride(out, 2), stride(out, 1), true);
    }
  };
  // Many small products (attention over a batch: a row of weights times each sentence's
  // states) are shared out whole among the threads: one parallel region for the stack
  // instead of one per product, most of which would go to starting and joining threads.
  // Inside it each product runs on one thread, with the same bits as when it has them all.
  const std::int64_t work = m * n * k;
  if (batches.numel > 1 && work < small_product)
    parallel_for(batches.numel, work / macs_per_element, run_batches);
  else
    run_batches(0, batches.numel);
}

}  // namespace

void CpuBackend::matmul(const TensorRef& out, const TensorRef& a, const TensorRef& b,
                        bool accumulate) {
  if (any_bfloat16({&out, &a, &b})) {
    Float32Copies f(*this);
    matmul(accumulate ? f.update(out) : f.output(out), f.input(a), f.input(b), accumulate);
    return f.finish();
  }
  NG_CHECK(out.rank() >= 2, "cpu matmul", "needs rank >= 2, got out of shape ", out.shape);
  NG_CHECK(out.dtype == a.dtype && out.dtype == b.dtype, "cpu matmul", "dtypes differ: out ",
           out.dtype, ", a ", a.dtype, ", b ", b.dtype);
  NG_CHECK(out.dtype != DType::Int64, "cpu matmul",
           "int64 matrix products are not supported; convert to a float dtype");
  if (out.numel() == 0) return;      // m = 0, n = 0 or an empty batch
  if (a.shape[a.rank() - 1] == 0) {  // k = 0: the empty sum is 0
    if (!accumulate) fill(out, 0.0);
    return;
  }
  if (out.dtype == DType::Float32)
    matmul_typed<float>(out, a, b, accumulate);
  else
    matmul_typed<double>(out, a, b, accumulate);
}

}  // namespace normgrad::backend::cpu
