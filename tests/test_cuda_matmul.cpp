// CPU-versus-CUDA parity of matmul, values and gradients: 2-d products, transposed and sliced
// views (which a GEMM reads as transposes or which are copied first), batched products,
// broadcast batch dims (whose gradients sum over the broadcast), vector operands, sizes that
// are not multiples of any tile, and the TF32 switch. The accumulating product
// (out += a @ b) is reached through conv2d's weight gradient, in test_conv.cpp.
//
// Tolerance: testing::summed with the inner dimension k as the number of terms (N(0, 1)
// operands, |a_i b_i| below 1 on average); a gradient's inner dimension is the output's
// other dim, or the batch for broadcast operands, and the tolerance takes the largest.
// TF32 is off by default, so cuBLAS must not round the operands to 10-bit mantissas.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "cuda_parity.h"

using namespace normgrad;
using testing::Function;
using testing::Inputs;
using testing::normal;
using testing::parity_mismatch;
using testing::summed;
using testing::Tolerance;

namespace {

struct MatmulCase {
  const char* name;
  Shape a, b;
  Function op;
  double inner;  // the longest sum a value or a gradient adds
};

const std::vector<MatmulCase> cases = {
    {"2-d", {17, 33}, {33, 9}, [](const Inputs& in) { return matmul(in[0], in[1]); }, 33},
    {"a transposed",
     {33, 17},
     {33, 9},
     [](const Inputs& in) { return matmul(in[0].t(), in[1]); },
     33},
    {"b transposed",
     {17, 33},
     {9, 33},
     [](const Inputs& in) { return matmul(in[0], in[1].t()); },
     33},
    {"both transposed",
     {33, 17},
     {9, 33},
     [](const Inputs& in) { return matmul(in[0].t(), in[1].t()); },
     33},
    {"sliced columns",
     {17, 66},
     {33, 9},
     [](const Inputs& in) { return matmul(in[0].slice(1, 0, 66, 2), in[1]); },
     33},
    {"batched", {4, 17, 33}, {4, 33, 9}, [](const Inputs& in) { return matmul(in[0], in[1]); }, 33},
    {"batched, transposed b",
     {4, 17, 33},
     {4, 9, 33},
     [](const Inputs& in) { return matmul(in[0], in[1].transpose(1, 2)); },
     33},
    {"batch from a permute",
     {17, 4, 33},
     {4, 33, 9},
     [](const Inputs& in) {
       return matmul(in[0].permute({1, 0, 2}), in[1]);
     },
     33},
    {"broadcast batch",
     {3, 1, 5, 8},
     {2, 8, 6},
     [](const Inputs& in) { return matmul(in[0], in[1]); },
     8 * 6},
    {"matrix times shared matrix",
     {5, 7, 16},
     {16, 3},
     [](const Inputs& in) { return matmul(in[0], in[1]); },
     35},
    {"vector times matrix",
     {40},
     {40, 7},
     [](const Inputs& in) { return matmul(in[0], in[1]); },
     40},
    {"matrix times vector",
     {7, 40},
     {40},
     [](const Inputs& in) { return matmul(in[0], in[1]); },
     40},
    {"vector dot vector", {300}, {300}, [](const Inputs& in) { return matmul(in[0], in[1]); }, 300},
    {"large, odd sizes",
     {129, 257},
     {257, 130},
     [](const Inputs& in) { return matmul(in[0], in[1]); },
     257},
};

}  // namespace

TEST_CASE("cuda parity: matmul in every layout, values and gradients") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    for (const MatmulCase& c : cases) {
      INFO(c.name << ", " << dtype);
      CHECK_NO_MISMATCH(parity_mismatch(c.op, {normal(c.a, 1, dtype), normal(c.b, 2, dtype)},
                                        summed(dtype, c.inner),
                                        summed(dtype, std::max(c.inner, 130.0))));
    }
  }
}

TEST_CASE("cuda parity: matmul with an empty inner dimension gives zeros") {
  SKIP_PARITY_WITHOUT_CUDA();
  CHECK_NO_MISMATCH(parity_mismatch([](const Inputs& in) { return matmul(in[0], in[1]); },
                                    {normal({3, 0}, 1), normal({0, 4}, 2)}, testing::exact));
}

TEST_CASE("cuda parity: with TF32 allowed, float32 matmul stays within TF32 rounding") {
  SKIP_PARITY_WITHOUT_CUDA();
  // TF32 keeps 10 of float32's 23 mantissa bits in the products (relative 2^-11 = 4.9e-4 per
  // operand): a dot product of k = 256 N(0, 1) terms is then off by about 1e-3 sum|a_i b_i|.
  cuda::set_allow_tf32(true);
  const std::string found =
      parity_mismatch([](const Inputs& in) { return matmul(in[0], in[1]); },
                      {normal({64, 256}, 3), normal({256, 64}, 4)}, Tolerance{1e-2, 2e-3 * 256},
                      Tolerance{1e-2, 2e-3 * 256});
  cuda::set_allow_tf32(false);
  CHECK_NO_MISMATCH(found);
  CHECK_FALSE(cuda::allow_tf32());
}
