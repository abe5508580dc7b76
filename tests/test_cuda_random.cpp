// Random numbers on the GPU are the CPU's: the generator is counter-based (Philox,
// core/generator.h), so value i of a draw depends only on (seed, offset + i), not on the device
// or the thread layout. Uniform and integer draws are bit-identical; normal draws agree to the
// last bits of the maths libraries' log and cos (testing::normal_draws). Checked for rand, randn
// and randint in each dtype and at sizes that leave partial blocks, for draws split at odd offsets,
// for dropout masks (through nn::Dropout and the attention dropout) and for GaussianNoise; and
// a draw that reads its seed and offset from device memory (as a CUDA graph records draws).

#include <bit>
#include <cstdint>
#include <vector>

#include "backends/dispatch.h"
#include "core/tensor_internal.h"
#include "cuda_parity.h"

using namespace normgrad;
using backend::RandomKind;
using testing::bits_mismatch;
using testing::mismatch;
using testing::parity_device;

TEST_CASE(
    "cuda parity: rand and randint are bit-identical to the CPU's for one seed, randn within "
    "ulps") {
  SKIP_PARITY_WITHOUT_CUDA();
  const Device gpu = parity_device();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    Generator host_generator(2024), device_generator(2024);
    for (const Shape& shape : {Shape{1}, Shape{7}, Shape{3, 1001}, Shape{1000, 1001}}) {
      INFO(dtype << " " << shape);
      CHECK_NO_MISMATCH(
          bits_mismatch(rand(shape, host_generator, {.dtype = dtype}),
                        rand(shape, device_generator, {.dtype = dtype, .device = gpu})));
      CHECK_NO_MISMATCH(mismatch(randn(shape, host_generator, {.dtype = dtype}),
                                 randn(shape, device_generator, {.dtype = dtype, .device = gpu}),
                                 testing::normal_draws(dtype)));
    }
    CHECK(host_generator.offset() == device_generator.offset());
  }
  Generator host_generator(7), device_generator(7);
  for (const auto& bounds : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {-5, 17}, {0, 2}, {-(std::int64_t{1} << 40), std::int64_t{1} << 40}}) {
    const auto& [low, high] = bounds;
    INFO("randint [" << bounds.first << ", " << bounds.second << ")");
    CHECK_NO_MISMATCH(bits_mismatch(
        randint(low, high, {513, 67}, host_generator),
        randint(low, high, {513, 67}, device_generator, {.dtype = DType::Int64, .device = gpu})));
  }
  // Integers drawn straight into a floating dtype.
  CHECK_NO_MISMATCH(bits_mismatch(
      randint(0, 10, {100}, host_generator, {.dtype = DType::Float32}),
      randint(0, 10, {100}, device_generator, {.dtype = DType::Float32, .device = gpu})));
  // bfloat16: the float32 draws rounded once on both devices (uniform ones kept below the end),
  // so normal ones may differ by one bfloat16 step where the float32 ones differ at a midpoint.
  const TensorOptions narrow{.dtype = DType::BFloat16},
      narrow_gpu{.dtype = DType::BFloat16, .device = gpu};
  CHECK_NO_MISMATCH(bits_mismatch(rand({1000, 1001}, host_generator, narrow),
                                  rand({1000, 1001}, device_generator, narrow_gpu)));
  CHECK_NO_MISMATCH(mismatch(randn({1000, 1001}, host_generator, narrow),
                             randn({1000, 1001}, device_generator, narrow_gpu),
                             {.rtol = 0x1p-7, .atol = 1e-6}));
  CHECK_NO_MISMATCH(bits_mismatch(randint(-3, 40, {100}, host_generator, narrow),
                                  randint(-3, 40, {100}, device_generator, narrow_gpu)));
}

TEST_CASE("cuda parity: a draw split at odd offsets across devices continues the CPU's stream") {
  SKIP_PARITY_WITHOUT_CUDA();
  const Device gpu = parity_device();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    INFO(dtype);
    Generator whole(99), split(99);
    const Tensor all = randn({1 + 101 + 99}, whole, {.dtype = dtype});
    const Tensor first = randn({1}, split, {.dtype = dtype});                    // offset 0, host
    const Tensor second = randn({101}, split, {.dtype = dtype, .device = gpu});  // offset 1
    const Tensor third = randn({99}, split, {.dtype = dtype});                   // offset 102
    CHECK_NO_MISMATCH(
        mismatch(all, cat({first, second.to(Device::cpu()), third}), testing::normal_draws(dtype)));
  }
}

TEST_CASE("cuda parity: a draw whose counters sit in device memory is the CPU's at them") {
  SKIP_PARITY_WITHOUT_CUDA();
  const Device gpu = parity_device();
  const std::uint64_t seed = 0x9e3779b97f4a7c15u;  // past int64's range: bits carried as they are
  const Tensor cell =
      from_vector<std::int64_t>({std::bit_cast<std::int64_t>(seed), 4096}, {2}).to(gpu);
  for (const DType dtype : {DType::Float32, DType::Float64, DType::BFloat16}) {
    for (const RandomKind kind : {RandomKind::Uniform, RandomKind::Integer}) {
      INFO(dtype << ", kind " << static_cast<int>(kind));
      const Tensor expected = empty({3, 1001}, {.dtype = dtype});
      const Tensor drawn = empty({3, 1001}, {.dtype = dtype, .device = gpu});
      backend::cpu_backend().random(detail::ref(expected), kind, seed, 4096 + 7, -1, 2);
      backend::backend_for(gpu).random_with_counters(detail::ref(drawn), kind, detail::ref(cell), 7,
                                                     -1, 2);
      CHECK_NO_MISMATCH(bits_mismatch(expected, drawn));
    }
  }
}

TEST_CASE("cuda parity: dropout masks are bit-identical, through the function and the module") {
  SKIP_PARITY_WITHOUT_CUDA();
  const Device gpu = parity_device();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    for (const double p : {0.1, 0.5, 0.9}) {
      INFO(dtype << ", p " << p);
      const Tensor x = testing::normal({37, 129}, 3, dtype);
      Generator host_generator(5), device_generator(5);
      const Tensor host = nn::functional::dropout(x, p, true, host_generator);
      const Tensor device = nn::functional::dropout(x.to(gpu), p, true, device_generator);
      CHECK(device.device() == gpu);
      CHECK_NO_MISMATCH(bits_mismatch(host, device));
      // The gradient is the same mask times the upstream gradient.
      const Tensor xh = x.detach().requires_grad_(), xd = x.to(gpu).detach().requires_grad_();
      Generator g1(6), g2(6);
      const Tensor upstream = testing::normal(x.shape(), 7, dtype);
      nn::functional::dropout(xh, p, true, g1).backward(upstream);
      nn::functional::dropout(xd, p, true, g2).backward(upstream.to(gpu));
      CHECK_NO_MISMATCH(bits_mismatch(xh.grad(), xd.grad(), "dropout gradient"));
    }
  }
  // The module, drawing from its own generator, twice in a row (the stream moves on).
  Generator host_generator(8), device_generator(8);
  nn::Dropout host_dropout(0.3, &host_generator), device_dropout(0.3, &device_generator);
  const Tensor x = testing::normal({64, 65}, 9);
  for (int call = 0; call < 2; ++call) {
    CAPTURE(call);
    CHECK_NO_MISMATCH(bits_mismatch(host_dropout.forward(x), device_dropout.forward(x.to(gpu))));
  }
  CHECK(host_generator.offset() == device_generator.offset());
}

TEST_CASE("cuda parity: GaussianNoise adds the CPU's noise") {
  SKIP_PARITY_WITHOUT_CUDA();
  const Device gpu = parity_device();
  Generator host_generator(10), device_generator(10);
  nn::GaussianNoise host_noise(0.15, &host_generator), device_noise(0.15, &device_generator);
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    INFO(dtype);
    const Tensor x = testing::normal({33, 17}, 11, dtype);
    // x + sigma n, with n a normal draw.
    CHECK_NO_MISMATCH(mismatch(host_noise.forward(x), device_noise.forward(x.to(gpu)),
                               testing::normal_draws(dtype)));
  }
}
