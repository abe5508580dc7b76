// CPU-versus-CUDA parity of what creates, converts and copies tensors: zeros, ones, full,
// arange and fill_ made directly on the GPU; dtype conversions (float32, float64, int64, both
// ways, of strided views) and their gradients; contiguous() of views; copy_ across devices
// with broadcasting; the in-place ops on strided views; cat, stack, split, chunk and unbind
// with their gradients. All of these move or round values once, so they are exact, except a
// fractional arange, whose start + i step may be contracted to a fused multiply-add on either
// device (one double rounding apart, hence the elementwise tolerance).

#include <cstdint>
#include <vector>

#include "cuda_parity.h"

using namespace normgrad;
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

TEST_CASE("cuda parity: cat, stack, split, chunk and unbind with their gradients") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    INFO(dtype);
    const auto f = [](const Inputs& in) {
      const Tensor joined = cat({in[0], in[1].t(), in[0].slice(0, 1, 3)}, 0);     // [10, 5]
      const Tensor stacked = stack({in[0].select(0, 0), in[1].select(1, 2)}, 1);  // [5, 2]
      const std::vector<Tensor> pieces = split(joined, 4, 0);
      const std::vector<Tensor> chunks = chunk(in[1], 3, 1);
      const std::vector<Tensor> rows = unbind(in[0], 0);
      return cat({joined.flatten(), stacked.flatten() * 2.0, pieces[2].flatten() * 3.0,
                  chunks[1].flatten() * -1.0, (rows[1] * rows[3]).flatten()});
    };
    // Gradients add a few exact products per element: the summed tolerance with 4 terms.
    CHECK_NO_MISMATCH(
        parity_mismatch(f, {testing::normal({4, 5}, 8, dtype), testing::normal({5, 4}, 9, dtype)},
                        exact, testing::summed(dtype, 4, 8.0)));
  }
}
