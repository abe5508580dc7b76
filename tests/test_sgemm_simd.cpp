// normgrad's float32 GEMMs (backends/cpu/sgemm_packed.h, with the AVX-512 and the AVX2
// micro-kernels) against a float64 product computed here term by term: every operand layout,
// edge tiles, several blocks along each dimension, an A too large to pack whole, accumulation,
// C inside a larger matrix, and the same bits on 1 and 2 threads. Each kernel is skipped, with
// a message, on CPUs without its instructions.

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/sgemm_avx2.h"
#include "backends/cpu/sgemm_avx512.h"
#include "core/threads.h"

using normgrad::backend::cpu::StridedMatrix;

namespace {

// The GEMMs this CPU has, and a message for each it lacks.
std::vector<const normgrad::backend::cpu::SimdGemm*> gemms_here() {
  std::vector<const normgrad::backend::cpu::SimdGemm*> here;
  for (const auto& [name, gemm] : {std::pair{"AVX-512", normgrad::backend::cpu::avx512_gemm()},
                                   std::pair{"AVX2", normgrad::backend::cpu::avx2_gemm()}}) {
    if (gemm != nullptr) {
      here.push_back(gemm);
    } else {
      const std::string note = std::string("this CPU lacks the instructions of the ") + name +
                               " GEMM (or the environment turned it off): not tested";
      MESSAGE(note);
    }
  }
  return here;
}

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
std::vector<float> run(const normgrad::backend::cpu::SimdGemm& simd, const Product& p,
                       const std::vector<float>& a, const std::vector<float>& b,
                       const std::vector<float>& c0) {
  const std::int64_t ldc = p.n + 5;
  std::vector<float> c = c0;
  const StridedMatrix a_matrix =
      p.transpose_a ? StridedMatrix{a.data(), 1, p.m} : StridedMatrix{a.data(), p.k, 1};
  const StridedMatrix b_matrix =
      p.transpose_b ? StridedMatrix{b.data(), 1, p.k} : StridedMatrix{b.data(), p.n, 1};
  simd.gemm(p.m, p.n, p.k, a_matrix, b_matrix, c.data(), ldc, p.accumulate);
  return c;
}

}  // namespace

TEST_CASE("cpu GEMM: layouts, edges and blocks against a float64 product") {
  // Tiles are 12 x 32 (AVX-512) and 6 x 16 (AVX2); blocks 240 or 144 rows, 256 terms, 2048
  // columns; A is packed whole up to 4 Mi values.
  const Product products[] = {
      {12, 32, 16, false, false, false},     // one tile
      {37, 45, 300, false, false, true},     // edge tiles both ways, two blocks of terms
      {250, 70, 513, true, false, false},    // two row blocks, three blocks of terms
      {13, 2100, 40, false, true, true},     // two column panels
      {96, 864, 600, false, true, false},    // conv2d's dW: B transposed
      {300, 33, 96, true, true, true},       // few columns: threads split the rows
      {7, 17, 600000, false, false, true},   // A of 4.2 Mi values: packed a block at a time
      {2100, 20, 2050, true, false, false},  // likewise, transposed, several blocks each way
  };
  for (const normgrad::backend::cpu::SimdGemm* simd : gemms_here()) {
    CAPTURE(simd->name);
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
      const std::vector<float> c = run(*simd, p, a, b, c0);
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
}

// Every element is summed by one thread in the same order however the threads split C.
TEST_CASE("cpu GEMM: 1 and 2 threads give the same bits") {
  const int before = normgrad::get_num_threads();
  for (const normgrad::backend::cpu::SimdGemm* simd : gemms_here()) {
    CAPTURE(simd->name);
    std::mt19937 generator(72);
    for (const Product& p : {Product{100, 700, 520, false, false, false},     // split by columns
                             Product{500, 40, 300, true, false, true},        // split by rows
                             Product{60, 90, 80000, false, false, false}}) {  // A packed by blocks
      const std::vector<float> a = random_values(p.m * p.k, generator);
      const std::vector<float> b = random_values(p.k * p.n, generator);
      const std::vector<float> c0 = random_values(p.m * (p.n + 5), generator);
      normgrad::set_num_threads(1);
      const std::vector<float> one = run(*simd, p, a, b, c0);
      normgrad::set_num_threads(2);
      const std::vector<float> two = run(*simd, p, a, b, c0);
      CHECK(one == two);
    }
  }
  normgrad::set_num_threads(before);
}
