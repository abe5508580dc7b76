// The AVX-512 float32 GEMM (backends/cpu/sgemm_avx512.cpp) against a float64 product computed
// here term by term: every operand layout, edge tiles, several blocks along each dimension,
// accumulation, C inside a larger matrix, and the same bits on 1 and 2 threads. Skipped, with
// a message, on CPUs without AVX-512.

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "backends/cpu/sgemm_avx512.h"
#include "core/threads.h"

using normgrad::backend::cpu::StridedMatrix;

namespace {

struct Product {
  std::int64_t m, n, k;
  bool transpose_a, transpose_b, accumulate;
};

std::vector<float> random_values(std::size_t count, std::mt19937& generator) {
  std::normal_distribution<float> normal;
  std::vector<float> values(count);
  for (float& value : values) value = normal(generator);
  return values;
}

// Runs one product into a C of n + 5 columns (ldc), so that the 5 columns beside it show
// any write past the edge; returns that whole buffer.
std::vector<float> run(const Product& p, const std::vector<float>& a, const std::vector<float>& b,
                       const std::vector<float>& c0) {
  const std::int64_t ldc = p.n + 5;
  std::vector<float> c = c0;
  const StridedMatrix a_matrix =
      p.transpose_a ? StridedMatrix{a.data(), 1, p.m} : StridedMatrix{a.data(), p.k, 1};
  const StridedMatrix b_matrix =
      p.transpose_b ? StridedMatrix{b.data(), 1, p.k} : StridedMatrix{b.data(), p.n, 1};
  normgrad::backend::cpu::gemm_avx512(p.m, p.n, p.k, a_matrix, b_matrix, c.data(), ldc,
                                      p.accumulate);
  return c;
}

}  // namespace

TEST_CASE("cpu AVX-512 GEMM: layouts, edges and blocks against a float64 product") {
  if (!normgrad::backend::cpu::avx512_gemm_available()) {
    MESSAGE("this CPU has no AVX-512: the AVX-512 GEMM is not tested");
    return;
  }
  // Tiles are 12 x 32; blocks 240 rows, 256 terms, 2048 columns.
  const Product products[] = {
      {12, 32, 16, false, false, false},   // one tile
      {37, 45, 300, false, false, true},   // edge tiles both ways, two blocks of terms
      {250, 70, 513, true, false, false},  // two row blocks, three blocks of terms
      {13, 2100, 40, false, true, true},   // two column panels
      {96, 864, 600, false, true, false},  // conv2d's dW: B transposed
      {300, 33, 96, true, true, true},     // few columns: threads split the rows
  };
  std::mt19937 generator(71);
  for (const Product& p : products) {
    CAPTURE(p.m);
    CAPTURE(p.n);
    CAPTURE(p.k);
    CAPTURE(p.transpose_a);
    CAPTURE(p.transpose_b);
    CAPTURE(p.accumulate);
    const std::int64_t ldc = p.n + 5;
    const std::vector<float> a = random_values(p.m * p.k, generator);
    const std::vector<float> b = random_values(p.k * p.n, generator);
    const std::vector<float> c0 = random_values(p.m * ldc, generator);
    const std::vector<float> c = run(p, a, b, c0);
    bool close = true, untouched = true;
    for (std::int64_t i = 0; i < p.m; ++i) {
      for (std::int64_t j = 0; j < p.n; ++j) {
        double sum = p.accumulate ? c0[i * ldc + j] : 0.0, magnitude = std::fabs(sum);
        for (std::int64_t q = 0; q < p.k; ++q) {
          const double term = static_cast<double>(a[p.transpose_a ? q * p.m + i : i * p.k + q]) *
                              b[p.transpose_b ? j * p.k + q : q * p.n + j];
          sum += term;
          magnitude += std::fabs(term);
        }
        // Float32 sums of k terms: a few units of 2^-24 of the terms' magnitudes.
        close = close && std::fabs(c[i * ldc + j] - sum) <= 1e-5 * magnitude + 1e-6;
      }
      for (std::int64_t j = p.n; j < ldc; ++j)
        untouched = untouched && c[i * ldc + j] == c0[i * ldc + j];
    }
    CHECK(close);
    CHECK(untouched);
  }
}

// Every element is summed by one thread in the same order however the threads split C.
TEST_CASE("cpu AVX-512 GEMM: 1 and 2 threads give the same bits") {
  if (!normgrad::backend::cpu::avx512_gemm_available()) {
    MESSAGE("this CPU has no AVX-512: the AVX-512 GEMM is not tested");
    return;
  }
  std::mt19937 generator(72);
  const int before = normgrad::get_num_threads();
  for (const Product& p : {Product{100, 700, 520, false, false, false},  // split by columns
                           Product{500, 40, 300, true, false, true}}) {  // split by rows
    const std::vector<float> a = random_values(p.m * p.k, generator);
    const std::vector<float> b = random_values(p.k * p.n, generator);
    const std::vector<float> c0 = random_values(p.m * (p.n + 5), generator);
    normgrad::set_num_threads(1);
    const std::vector<float> one = run(p, a, b, c0);
    normgrad::set_num_threads(2);
    const std::vector<float> two = run(p, a, b, c0);
    CHECK(one == two);
  }
  normgrad::set_num_threads(before);
}
