// The copies family (contiguous, clone, to(dtype) and to(device); fill_, copy_ and the other
// in-place updates; the factories' fills and ranges) on each floor, each section below:
//   - the ops (autograd/functions/convert.cpp, inplace.cpp): contiguous copies only when
//     needed, conversions, and a move to the device a tensor is on costs nothing;
//   - the CPU kernels (backends/cpu/copy_fill.cpp), called directly through TensorRefs over
//     std::vector buffers: fill and arange on contiguous, sliced, transposed, rank-0 and empty
//     views, and copies that convert dtypes and follow every layout;
//   - on a GPU, the CUDA kernels (fill, arange and copy in backends/cuda/elementwise.cu) against
//     the CPU's.
// The gradient checks of contiguous(), clone() and to(dtype) are test_join.cpp's "gradcheck:
// joining, splitting and conversions"; the factories' own values and errors are in
// test_tensor.cpp.

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "cpu_kernel_buffers.h"
#include "cuda_parity.h"
#include "helpers.h"

using namespace normgrad;

TEST_CASE("contiguous copies only when needed, and reshape falls back to a copy") {
  Tensor base = arange(6).reshape({2, 3});
  CHECK(base.contiguous().is_same(base));
  Tensor t = base.t();
  Tensor dense = t.contiguous();
  CHECK(dense.is_contiguous());
  CHECK(dense.storage() != base.storage());
  CHECK(dense.to_vector<float>() == std::vector<float>{0, 3, 1, 4, 2, 5});
  CHECK_ERROR(t.view({6}), "view", "without copying", "reshape");
  Tensor flat = t.reshape({6});
  CHECK(flat.to_vector<float>() == std::vector<float>{0, 3, 1, 4, 2, 5});
  // A view of a view where one is possible.
  CHECK(base.view({3, 2}).storage() == base.storage());
  CHECK(zeros({4, 6}).narrow(0, 1, 2).view({2, 2, 3}).shape() == Shape{2, 2, 3});
}

TEST_CASE("to(dtype) converts values and to(device) to the same device is free") {
  Tensor x = tensor({1.5, -2.25, 3.0});
  CHECK(x.to(DType::Float64).to_vector<double>() == std::vector<double>{1.5, -2.25, 3.0});
  CHECK(x.to(DType::Int64).to_vector<std::int64_t>() == std::vector<std::int64_t>{1, -2, 3});
  CHECK(x.to(DType::Float32).is_same(x));
  CHECK(x.to(Device::cpu()).is_same(x));
  // Past the last GPU (cuda:0 where there is none) is refused, naming the device.
  const int past = cuda::device_count();
  const std::string past_name = "cuda:" + std::to_string(past);
  CHECK_ERROR(x.to(Device::cuda(past)), past_name.c_str());
  if (cuda::is_available()) {
    const Tensor on_gpu = x.to(Device::cuda());
    CHECK(on_gpu.to(Device::cuda()).is_same(on_gpu));
    CHECK(on_gpu.to(Device::cpu()).to_vector<float>() == x.to_vector<float>());
  }
}

// ---- the CPU kernels ---------------------------------------------------------------------------

using namespace testing::cpu_kernels;

TEST_CASE("cpu fill and arange on contiguous, sliced, transposed, rank-0 and empty views") {
  std::vector<float> data(12, 0.0f);
  cpu().fill(view(data, {2, 3}, {6, 2}), 5.0);  // every other element of a 2x6 buffer
  CHECK(data == std::vector<float>{5, 0, 5, 0, 5, 0, 5, 0, 5, 0, 5, 0});
  std::vector<std::int64_t> scalar{0};
  cpu().fill(view(scalar, {}), 7.0);
  CHECK(scalar[0] == 7);
  std::vector<double> empty;
  cpu().fill(view(empty, {0, 3}), 1.0);  // nothing to do, nothing touched

  // arange follows the logical row-major order, whatever the memory layout.
  std::vector<double> transposed(6);
  cpu().arange(view(transposed, {2, 3}, {1, 2}), 1.0, 0.5);
  CHECK(transposed == std::vector<double>{1, 2.5, 1.5, 3, 2, 3.5});
  std::vector<std::int64_t> integers(5);
  cpu().arange(view(integers, {5}), -2, 3);
  CHECK(integers == std::vector<std::int64_t>{-2, 1, 4, 7, 10});
  std::vector<float> large(100003);
  cpu().arange(view(large, {100003}), 0, 1);
  CHECK(large[99999] == 99999.0f);
}

TEST_CASE("cpu copy converts dtypes and follows every layout") {
  std::vector<double> source{1.5, -2.25, 3, 4, 5, 6};
  std::vector<float> transposed(6);
  cpu().copy(view(transposed, {3, 2}), view(source, {3, 2}, {1, 3}));
  CHECK(transposed == std::vector<float>{1.5f, 4, -2.25f, 5, 3, 6});
  std::vector<std::int64_t> integers(6);
  cpu().copy(view(integers, {2, 3}), view(source, {2, 3}));
  CHECK(integers == std::vector<std::int64_t>{1, -2, 3, 4, 5, 6});
  // A broadcast row (stride 0) copied into a matrix.
  std::vector<float> row{1, 2, 3}, matrix(6);
  cpu().copy(view(matrix, {2, 3}), view(row, {2, 3}, {0, 1}));
  CHECK(matrix == std::vector<float>{1, 2, 3, 1, 2, 3});
  // A sliced source (second column of a 3x4 matrix) into a rank-1 destination.
  std::vector<float> wide(12), column(3);
  std::iota(wide.begin(), wide.end(), 0.0f);
  cpu().copy(view(column, {3}), view(wide, {3}, {4}, 1));
  CHECK(column == std::vector<float>{1, 5, 9});
  // Large contiguous copies (the memcpy path, split over threads) are exact.
  const std::vector<float> big = sample_values<float>(300001);
  std::vector<float> big_source = big, big_copy(big.size());
  cpu().copy(view(big_copy, {300001}), view(big_source, {300001}));
  CHECK(big_copy == big);
}

// ---- on a GPU: CPU against CUDA ----------------------------------------------------------------

// What creates, converts and copies tensors: zeros, ones, full, arange and fill_ made directly
// on the GPU; dtype conversions (float32, float64, int64, both ways, of strided views) and
// their gradients; contiguous() of views; copy_ across devices with broadcasting; the in-place
// ops on strided views. All of these move or round values once, so they are exact, except a
// fractional arange, whose start + i step may be contracted to a fused multiply-add on either
// device (one double rounding apart, hence the elementwise tolerance).

using testing::bits_mismatch;
using testing::elementwise;
using testing::exact;
using testing::Inputs;
using testing::parity_mismatch;

TEST_CASE("cuda parity: zeros, ones, full and fill_ made on the GPU hold the CPU's bits") {
  SKIP_PARITY_WITHOUT_CUDA();
  const Device gpu = testing::parity_device();
  for (const DType dtype : {DType::Float32, DType::Float64, DType::Int64}) {
    INFO(dtype);
    const TensorOptions host{.dtype = dtype}, device{.dtype = dtype, .device = gpu};
    CHECK_NO_MISMATCH(bits_mismatch(zeros({3, 70001}, host), zeros({3, 70001}, device)));
    CHECK_NO_MISMATCH(bits_mismatch(ones({5, 7}, host), ones({5, 7}, device)));
    CHECK_NO_MISMATCH(bits_mismatch(full({4, 3}, -3.0, host), full({4, 3}, -3.0, device)));
    CHECK_NO_MISMATCH(bits_mismatch(scalar_tensor(7.0, host), scalar_tensor(7.0, device)));
    CHECK(zeros({3, 70001}, device).device() == gpu);
  }
  // A value that float32 must round: the same rounding on both devices.
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    const TensorOptions host{.dtype = dtype}, device{.dtype = dtype, .device = gpu};
    CHECK_NO_MISMATCH(bits_mismatch(full({9}, 0.1, host), full({9}, 0.1, device)));
    // fill_ and zero_ through a strided view write only the view.
    Tensor a = ones({6, 8}, host), b = ones({6, 8}, device);
    a.t().slice(0, 1, 8, 3).fill_(2.5);
    b.t().slice(0, 1, 8, 3).fill_(2.5);
    a.select(0, 4).zero_();
    b.select(0, 4).zero_();
    CHECK_NO_MISMATCH(bits_mismatch(a, b));
  }
  CHECK_NO_MISMATCH(bits_mismatch(zeros({0}), zeros({0}, {.device = gpu})));  // empty
}

TEST_CASE("cuda parity: arange with integer steps is exact, with fractional ones close") {
  SKIP_PARITY_WITHOUT_CUDA();
  const Device gpu = testing::parity_device();
  for (const DType dtype : {DType::Float32, DType::Float64, DType::Int64}) {
    INFO(dtype);
    const TensorOptions host{.dtype = dtype}, device{.dtype = dtype, .device = gpu};
    CHECK_NO_MISMATCH(bits_mismatch(arange(100000.0, host), arange(100000.0, device)));
    CHECK_NO_MISMATCH(bits_mismatch(arange(5, -7, -3, host), arange(5, -7, -3, device)));
  }
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    INFO(dtype);
    CHECK_NO_MISMATCH(testing::mismatch(arange(-3, 7, 0.1, {.dtype = dtype}),
                                        arange(-3, 7, 0.1, {.dtype = dtype, .device = gpu}),
                                        elementwise(dtype)));
  }
}

TEST_CASE("cuda parity: dtype conversions of strided views, and their gradients, are exact") {
  SKIP_PARITY_WITHOUT_CUDA();
  // Values that float32 must round, and large ones whose int64 conversion truncates.
  const Tensor f64 = testing::normal({6, 10}, 1, DType::Float64, 1000.0) / 3.0;
  const Tensor f32 = testing::normal({6, 10}, 2, DType::Float32, 1000.0) / 3.0;
  CHECK_NO_MISMATCH(parity_mismatch(
      [](const Inputs& in) { return in[0].t().slice(0, 1, 10, 2).to(DType::Float32); }, {f64},
      exact));
  CHECK_NO_MISMATCH(parity_mismatch(
      [](const Inputs& in) { return in[0].t().slice(0, 1, 10, 2).to(DType::Float64); }, {f32},
      exact));
  for (const Tensor& x : {f32, f64})
    CHECK_NO_MISMATCH(
        parity_mismatch([](const Inputs& in) { return in[0].t().to(DType::Int64); }, {x}, exact));
  // int64 to floating, with values beyond float32's 24-bit mantissa (rounded to nearest).
  Generator generator(3);
  const Tensor big = randint(-(std::int64_t{1} << 40), std::int64_t{1} << 40, {4, 9}, generator);
  for (const DType dtype : {DType::Float32, DType::Float64})
    CHECK_NO_MISMATCH(
        parity_mismatch([dtype](const Inputs& in) { return in[0].t().to(dtype); }, {big}, exact));
}

TEST_CASE("cuda parity: contiguous() and clone() of permuted, sliced and expanded views") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    INFO(dtype);
    const auto f = [](const Inputs& in) {
      const Tensor permuted = in[0].permute({2, 0, 1}).contiguous();
      const Tensor sliced = in[0].slice(1, 0, 5, 2).slice(2, 1, 7, 3).contiguous();
      const Tensor expanded = in[0].select(1, 2).unsqueeze(0).expand({3, 4, 7}).contiguous();
      const Tensor cloned = in[0].transpose(0, 2).clone();
      return cat(
          {permuted.flatten(), sliced.flatten() * 2.0, expanded.flatten(), cloned.flatten() * 3.0});
    };
    // The expanded view's gradient adds three upstream values per element, in an order that
    // may differ between the devices: the summed tolerance.
    CHECK_NO_MISMATCH(parity_mismatch(f, {testing::normal({4, 5, 7}, 4, dtype)}, exact,
                                      testing::summed(dtype, 8, 4.0)));
  }
}

TEST_CASE("cuda parity: copy_ across devices, with broadcasting and dtype conversion") {
  SKIP_PARITY_WITHOUT_CUDA();
  const Device gpu = testing::parity_device();
  const Tensor row = testing::normal({1, 6}, 5, DType::Float64);
  Tensor host = zeros({4, 6}), device = zeros({4, 6}, {.device = gpu});
  host.copy_(row);
  device.copy_(row);  // from the CPU into the GPU, converted and broadcast
  CHECK(device.device() == gpu);
  CHECK_NO_MISMATCH(bits_mismatch(host, device));
  // From the GPU into a strided view of a GPU tensor, and from the GPU to the CPU.
  Tensor host_t = zeros({6, 4}), device_t = zeros({6, 4}, {.device = gpu});
  host_t.t().copy_(host * 2.0);
  device_t.t().copy_(device * 2.0);
  CHECK_NO_MISMATCH(bits_mismatch(host_t, device_t));
  Tensor back = zeros({6, 4}, {.dtype = DType::Float64});
  back.copy_(device_t);
  CHECK_NO_MISMATCH(bits_mismatch(back, host_t.to(DType::Float64)));
}

TEST_CASE("cuda parity: in-place ops through strided views") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    INFO(dtype);
    const auto f = [](const Inputs& in) {
      Tensor x = in[0].detach().clone();
      const Tensor y = in[1].detach();
      x.t().slice(0, 0, 6, 2).add_(y.slice(0, 0, 3).slice(1, 0, 4), 0.5);
      x.select(1, 1).mul_(-2.0);
      x.narrow(0, 1, 2).sub_(y.t().slice(0, 0, 2).slice(1, 0, 6));
      x.add_(0.25);
      x.div_(y.t().slice(0, 2, 6).abs() + 1.0);
      x.mul_(y.t().slice(0, 0, 4));
      x.div_(3.0);
      return x;
    };
    CHECK_NO_MISMATCH(
        parity_mismatch(f, {testing::normal({4, 6}, 6, dtype), testing::normal({6, 6}, 7, dtype)},
                        testing::elementwise(dtype)));
  }
}
