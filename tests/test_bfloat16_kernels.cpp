// Each backend's kernels take bfloat16 and give, bit for bit, the float32 kernel's result on
// the same values, rounded once (elementwise ops, reductions, softmax, the accumulating indexing
// ops); a product of bfloat16 operands may keep its float32 sums. Every case runs on the CPU,
// and again on a GPU where there is one. The op families' kernels (norms, batch norm,
// convolution, pooling, the recurrent steps) are checked alike in the bfloat16 sections of their
// test_<family>.cpp.
//
// The CPU computes bfloat16 through float32 working copies of its operands
// (backends/bfloat16_widening.h), laid out contiguously but for their broadcast dims, so there
// the reference is the float32 kernel on the values laid out as the copy lays them out
// (laid_out_as_copied). CUDA's kernels are native: they widen each value they load to float32,
// compute as their float32 instantiation does on the same view, and round once as they store;
// one case checks, by the peak of the GPU's memory, that they make no float32 copies.

#include <functional>
#include <string>
#include <vector>

#include "backends/dispatch.h"
#include "backends/op_names.h"
#include "bfloat16_twins.h"
#include "core/tensor_internal.h"
#include "cuda_parity.h"
#include "helpers.h"
#include "normgrad.h"

using namespace normgrad;
using backend::BinaryOp;
using backend::UnaryOp;
using testing::bits_mismatch;
using namespace testing::twins;

TEST_CASE(
    "bfloat16 kernels: the GPU's elementwise ops, reductions, softmax and norms make no float32 "
    "copies") {
  SKIP_WITHOUT_CUDA();  // the CPU computes bfloat16 on float32 copies by design
  Generator generator(45);
  const std::int64_t n = 1024;
  const Device device = Device::cuda();
  const Tensor x = to_bfloat16(randn({n, n}, generator)).to(device);  // 2 MiB; 4 MiB as float32
  const Tensor y = to_bfloat16(randn({n, n}, generator)).to(device);
  Tensor out = empty({n, n}, {.dtype = DType::BFloat16, .device = device});
  Tensor row_sums = empty({n, 1}, {.dtype = DType::BFloat16, .device = device});
  Tensor row_indices = empty({n, 1}, {.dtype = DType::Int64, .device = device});
  Tensor mean = empty({n}, {.device = device}), rstd = empty({n}, {.device = device});
  backend::Backend& backend = backend::backend_for(device);
  const backend::NormParams layer_norm{.centred = true, .eps = 1e-5};
  reset_peak_memory_stats(device);
  const std::size_t allocated = memory_stats(device).allocated_bytes;
  backend.unary(UnaryOp::Tanh, detail::ref(out), detail::ref(x), 0, 0);
  backend.unary(UnaryOp::Exp, detail::ref(out), detail::ref(x), 0, 0);
  backend.binary(BinaryOp::Mul, detail::ref(out), detail::ref(x), detail::ref(y), 0);
  backend.where(detail::ref(out), detail::ref(x), detail::ref(x), detail::ref(y));
  backend.binary(BinaryOp::Lt, detail::ref(out), detail::ref(x), detail::ref(y), 0);
  backend.reduce(backend::ReduceOp::Sum, detail::ref(row_sums), detail::ref(x), 0, 1.0);
  backend.reduce(backend::ReduceOp::Max, detail::ref(row_sums), detail::ref(x), 0, 1.0);
  backend.reduce(backend::ReduceOp::ArgMax, detail::ref(row_indices), detail::ref(x), 0, 1.0);
  backend.softmax(detail::ref(out), detail::ref(x), 1, false);
  backend.softmax_backward(detail::ref(out), detail::ref(y), detail::ref(x), 1, false);
  backend.norm_forward(layer_norm, detail::ref(out), detail::ref(mean), detail::ref(rstd),
                       detail::ref(x), nullptr, nullptr);
  backend.norm_backward(layer_norm, detail::ref(out), nullptr, nullptr, detail::ref(y),
                        detail::ref(x), detail::ref(mean), detail::ref(rstd), nullptr);
  cuda::synchronize();
  const MemoryStats stats = memory_stats(device);
  CHECK(stats.allocated_bytes == allocated);
  // The reductions' partial results (16 KiB for the sum, 64 KiB for argmax's values with
  // their indices) are the only scratch. A float32 copy of x is 4 MiB.
  CHECK(stats.peak_allocated_bytes <= allocated + (128u << 10));
}
