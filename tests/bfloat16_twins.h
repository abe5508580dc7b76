#pragma once
// What the bfloat16 kernel checks share (the bfloat16 sections of test_<family>.cpp, and
// test_bfloat16.cpp): the devices every case runs on, and bfloat16 tensors beside their float32
// twins, so that a backend's bfloat16 kernel and its float32 kernel run on the same values and
// the first's output can be held, bit for bit, to the second's rounded once; a bfloat16 view
// beside its float32 values laid out as the kernel under test reads them; and the checks that
// the GPU's bfloat16 kernels make no float32 copies of their operands.
//
//   using namespace testing::twins;
//   const Twin x = input_twin(device, {5, 7}, generator), y = output_twin(device, {5, 7});
//   for (const bool narrow : {true, false}) kernels.some_kernel(y.ref(narrow), x.ref(narrow));
//   CHECK_NO_MISMATCH(twin_mismatch(y, "y"));

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backends/dispatch.h"
#include "core/tensor_internal.h"
#include "cuda_parity.h"

namespace testing::twins {

inline normgrad::Tensor to_bfloat16(const normgrad::Tensor& t) {
  return t.to(normgrad::DType::BFloat16);
}
inline normgrad::Tensor to_float32(const normgrad::Tensor& t) {
  return t.to(normgrad::DType::Float32);
}

// The devices every case runs on: the CPU, and a GPU where there is one.
inline std::vector<normgrad::Device> devices_present() {
  std::vector<normgrad::Device> devices = {normgrad::Device::cpu()};
  if (normgrad::cuda::is_available()) devices.push_back(normgrad::Device::cuda());
  return devices;
}

// A bfloat16 tensor and its float32 twin, both on one device: inputs hold the same
// values; outputs are written by the bfloat16 kernel and by the float32 one respectively.
struct Twin {
  normgrad::Tensor stored, widened;
  normgrad::backend::TensorRef ref(bool narrow) const {
    return normgrad::detail::ref(narrow ? stored : widened);
  }
};

inline Twin input_twin(normgrad::Device device, const normgrad::Shape& shape,
                       normgrad::Generator& generator, double scale = 1.0) {
  const normgrad::Tensor values = to_bfloat16(normgrad::randn(shape, generator) * scale).to(device);
  return {values, to_float32(values)};
}

// An output pair; `statistics` ones are float32 on both sides (a norm's mean and 1 / r).
inline Twin output_twin(normgrad::Device device, const normgrad::Shape& shape,
                        bool statistics = false) {
  const normgrad::TensorOptions stored{
      .dtype = statistics ? normgrad::DType::Float32 : normgrad::DType::BFloat16, .device = device};
  return {normgrad::empty(shape, stored), normgrad::empty(shape, {.device = device})};
}

// The bfloat16 kernel's output against the float32 kernel's, rounded: the same bits.
inline std::string twin_mismatch(const Twin& out, const std::string& what) {
  const normgrad::Tensor expected =
      out.stored.dtype() == normgrad::DType::BFloat16 ? to_bfloat16(out.widened) : out.widened;
  return bits_mismatch(out.stored, expected, what);
}

// A bfloat16 view and its float32 twin, laid out as the kernel under test sees the values, so
// that the float32 kernel walks them alike and sums them in the same order.
struct Operand {
  normgrad::Tensor stored;   // bfloat16
  normgrad::Tensor widened;  // float32
};
using View = std::function<normgrad::Tensor(const normgrad::Tensor&)>;

// The values of a bfloat16 view in float32, laid out as the CPU's working copy lays them out
// (backends/bfloat16_widening.h): broadcast dims (stride 0) kept broadcast, every other dim
// contiguous. On a strided view the float32 kernel may take other code than on this layout
// (exp's scalar function rather than its vectorised row, another order of summation), so this
// layout, not the view's, is what the CPU's bfloat16 result is the float32 kernel's on.
inline normgrad::Tensor laid_out_as_copied(const normgrad::Tensor& stored) {
  normgrad::Tensor distinct = stored;
  for (std::size_t d = 0; d < stored.shape().size(); ++d)
    if (stored.strides()[d] == 0) distinct = distinct.narrow(static_cast<std::int64_t>(d), 0, 1);
  return to_float32(distinct).contiguous().expand(stored.shape());
}

// CUDA's native kernels walk the view itself; the CPU computes on its working copy.
inline Operand view_of(const normgrad::Tensor& bfloat16_base, const View& view) {
  const normgrad::Tensor stored = view(bfloat16_base);
  if (stored.device().is_cuda()) return {stored, view(to_float32(bfloat16_base))};
  return {stored, laid_out_as_copied(stored)};
}

inline normgrad::backend::Backend& backend_of(const normgrad::Tensor& t) {
  return normgrad::backend::backend_for(t.device());
}

inline normgrad::Tensor empty_like_dtype(const normgrad::Tensor& t, normgrad::DType dtype) {
  return normgrad::empty(t.shape(), {.dtype = dtype, .device = t.device()});
}

// A mask of 1s and 0s over `rows` rows, as the kernels read it.
inline Twin mask_twin(normgrad::Device device, std::int64_t rows) {
  std::vector<float> values(static_cast<std::size_t>(rows));
  for (std::int64_t row = 0; row < rows; ++row) values[row] = row % 3 == 2 ? 0.0f : 1.0f;
  const normgrad::Tensor mask = normgrad::from_vector<float>(values, {rows}).to(device);
  return {to_bfloat16(mask), mask};
}

inline normgrad::backend::NormParams layer_norm_params() { return {.centred = true, .eps = 1e-5}; }
// The RMS family over the first k of `width` values (k = width: RMSNorm).
inline normgrad::backend::NormParams rms_norm_params(std::int64_t k) {
  return {.centred = false, .k = k, .divisor = static_cast<double>(k), .eps = 1e-8};
}

// The bytes the GPU's caching allocator takes for a request: 512-byte granules below 1 MiB,
// 2 MiB ones above (backends/cuda/cuda_backend.cpp).
inline std::size_t allocator_block(std::size_t bytes) {
  const std::size_t granule = bytes < (std::size_t{1} << 20) ? 512 : std::size_t{2} << 20;
  return (bytes + granule - 1) / granule * granule;
}

// Runs `kernels`, which write into tensors made beforehand, and checks that the device's
// allocator handed out at most `scratch` bytes meanwhile and has them back at the end.
inline void check_scratch(const char* what, std::size_t scratch,
                          const std::function<void()>& kernels) {
  CAPTURE(what);
  const normgrad::Device gpu = normgrad::Device::cuda();
  normgrad::cuda::synchronize();
  normgrad::reset_peak_memory_stats(gpu);
  const std::size_t allocated = normgrad::memory_stats(gpu).allocated_bytes;
  kernels();
  normgrad::cuda::synchronize();
  const normgrad::MemoryStats stats = normgrad::memory_stats(gpu);
  CHECK(stats.allocated_bytes == allocated);
  CHECK(stats.peak_allocated_bytes - allocated <= scratch);
}

// The fixture of the cases that check, by the peak of the GPU's memory, that its bfloat16
// kernels make no float32 copies (TEST_CASE_FIXTURE): each kernel's scratch is its own
// workspaces alone (the float32 values it keeps between passes, its partial sums); float32
// copies of its operands, as the CPU makes, would take several times more (stated beside each
// case). The cases skip without a GPU: the CPU computes bfloat16 on float32 copies by design.
class GpuScratch {
 protected:
  normgrad::Generator generator{51};
  const normgrad::Device gpu = normgrad::Device::cuda();
  // The CPU's where there is no GPU: the cases skip before they call a kernel.
  normgrad::backend::Backend& kernels = normgrad::backend::backend_for(
      normgrad::cuda::is_available() ? gpu : normgrad::Device::cpu());
  static constexpr std::size_t float32_bytes = 4;

  // bfloat16 values drawn on the GPU.
  normgrad::Tensor input(const normgrad::Shape& shape) {
    return to_bfloat16(normgrad::randn(shape, generator)).to(gpu);
  }
  // A tensor on the GPU for a kernel to write, bfloat16 unless said otherwise.
  normgrad::Tensor output(const normgrad::Shape& shape,
                          normgrad::DType dtype = normgrad::DType::BFloat16) const {
    return normgrad::empty(shape, {.dtype = dtype, .device = gpu});
  }
  static normgrad::backend::TensorRef r(const normgrad::Tensor& t) {
    return normgrad::detail::ref(t);
  }
};

}  // namespace testing::twins
