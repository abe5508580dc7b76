// CPU-versus-CUDA parity of reductions and softmax, values and gradients: sum, mean and var
// over every kind of dim set (one dim, several, all, keepdim, strided views) and at 2^20
// elements; max, min, argmax and argmin (exact, first index on ties); softmax and log_softmax
// along the last dim and along others.
//
// Tolerances. Sums are added in another order on the GPU, so float values use testing::summed
// (1e-6 sum|terms| in float32, 1e-14 in float64). Where the data are small multiples of 1/2,
// every partial sum of up to 2^20 of them is exact in float32, so any order gives the same
// bits: those cases are exact, and catch a lost or doubled element that a loose tolerance
// could hide. max, min and their indices select values and are exact.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "cuda_parity.h"

using namespace normgrad;
using testing::bits_mismatch;
using testing::exact;
using testing::Inputs;
using testing::parity_mismatch;
using testing::summed;
using testing::Tolerance;

TEST_CASE("cuda parity: softmax and log_softmax along the last dim and along others") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    const bool f64 = dtype == DType::Float64;
    // softmax values lie in (0, 1]: a few ulps of exp plus the relative error of the row sum.
    const Tolerance softmax_values = f64 ? Tolerance{1e-12, 1e-14} : Tolerance{1e-5, 1e-7};
    // log_softmax = x - max - log(sum): an absolute error of a few ulps of |x - max| <= 30.
    const Tolerance log_values = f64 ? Tolerance{1e-12, 1e-13} : Tolerance{1e-5, 1e-5};
    // softmax backward, y (dy - s) with s = sum(dy y) a weighted mean of dy: the error of s is
    // a few ulps of max|dy|, and y <= 1 scales it.
    const Tolerance softmax_gradients = f64 ? Tolerance{1e-12, 1e-13} : Tolerance{1e-5, 1e-5};
    for (const Shape& shape : {Shape{4, 6, 7}, Shape{3, 5, 1000}, Shape{2, 1000, 3}}) {
      const Tensor x = testing::normal(shape, 8, dtype, 3.0);
      for (const std::int64_t dim : {-1, 0, 1}) {
        INFO(dtype << ", shape " << shape << ", dim " << dim);
        const std::int64_t n = *std::max_element(shape.begin(), shape.end());  // bounds any row
        // log_softmax backward, dy - exp(y) sum(dy): a plain sum of n upstream values.
        const Tolerance log_gradients = summed(dtype, static_cast<double>(n), 1.0);
        CHECK_NO_MISMATCH(parity_mismatch([dim](const Inputs& in) { return softmax(in[0], dim); },
                                          {x}, softmax_values, softmax_gradients));
        CHECK_NO_MISMATCH(
            parity_mismatch([dim](const Inputs& in) { return log_softmax(in[0], dim); }, {x},
                            log_values, log_gradients));
        // A transposed input: the softmax dim is strided.
        CHECK_NO_MISMATCH(
            parity_mismatch([dim](const Inputs& in) { return in[0].transpose(0, 2).softmax(dim); },
                            {x}, softmax_values, softmax_gradients));
        CHECK_NO_MISMATCH(parity_mismatch(
            [dim](const Inputs& in) { return in[0].transpose(1, 2).log_softmax(dim); }, {x},
            log_values, log_gradients));
      }
    }
    // One long row of 65536 values.
    INFO(dtype << ", one row of 2^16");
    const Tensor row = testing::normal({2, 1 << 16}, 9, dtype, 3.0);
    CHECK_NO_MISMATCH(parity_mismatch([](const Inputs& in) { return softmax(in[0], 1); }, {row},
                                      softmax_values, softmax_gradients));
    CHECK_NO_MISMATCH(parity_mismatch([](const Inputs& in) { return log_softmax(in[0], 1); }, {row},
                                      log_values, summed(dtype, 1 << 16)));
  }
}
