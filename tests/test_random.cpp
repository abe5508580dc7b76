// The random family (rand, randn, randint from a Generator, and the dropout masks and noise
// drawn from them) on each floor, each section below:
//   - the draws (core/factories.cpp, core/generator.h): the same seed gives the same numbers,
//     whatever the thread count, the draws have the right moments and range, and a generator's
//     state is its seed and offset;
//   - the CPU kernels (backends/cpu/random.cpp, the eight-at-a-time stream in
//     backends/cpu/simd/philox_avx2.h), called directly through TensorRefs over std::vector
//     buffers: Philox's published known answers, draws addressed by counter whatever the layout
//     and thread count, counters read from memory, and the moments of each kind of draw;
//   - on a GPU, the CUDA kernels (backends/cuda/random.cu) against the CPU's;
//   - bfloat16: draws are float32's rounded once (uniform ones kept below the end), and dropout
//     keeps float32's elements.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "backends/cpu/simd/philox_avx2.h"
#include "backends/dispatch.h"
#include "backends/philox.h"
#include "base/error.h"
#include "bfloat16_checks.h"
#include "core/tensor_internal.h"
#include "cpu_kernel_buffers.h"
#include "cuda_parity.h"
#include "helpers.h"

using namespace normgrad;
using backend::RandomKind;

TEST_CASE("the same seed gives the same numbers, and different seeds differ") {
  Generator g1(42), g2(42), g3(43);
  const std::vector<float> first = randn({1000}, g1).to_vector<float>();
  CHECK(first == randn({1000}, g2).to_vector<float>());
  CHECK(first != randn({1000}, g3).to_vector<float>());
  // The stream moves on: a second draw differs from the first.
  CHECK(randn({1000}, g1).to_vector<float>() != first);
  manual_seed(7);
  const std::vector<float> a = rand({10}).to_vector<float>();
  manual_seed(7);
  CHECK(rand({10}).to_vector<float>() == a);
}

TEST_CASE("random draws do not depend on the thread count") {
  const int threads = get_num_threads();
  set_num_threads(1);
  Generator g1(5);
  const std::vector<double> one =
      randn({100000}, g1, {.dtype = DType::Float64}).to_vector<double>();
  set_num_threads(2);
  Generator g2(5);
  const std::vector<double> two =
      randn({100000}, g2, {.dtype = DType::Float64}).to_vector<double>();
  set_num_threads(threads);
  CHECK(one == two);
  CHECK_ERROR(set_num_threads(0), "set_num_threads", "at least 1");
}

TEST_CASE("uniform, normal and integer draws have the right moments and range") {
  Generator generator(2026);
  const Tensor u = rand({200000}, generator, {.dtype = DType::Float64});
  CHECK(u.mean().item() == doctest::Approx(0.5).epsilon(0.01));
  CHECK(u.var().item() == doctest::Approx(1.0 / 12).epsilon(0.02));
  CHECK(u.max().item() < 1.0);
  CHECK(min(u).item() >= 0.0);
  const Tensor n = randn({200000}, generator, {.dtype = DType::Float64});
  CHECK(std::fabs(n.mean().item()) < 0.01);
  CHECK(n.var().item() == doctest::Approx(1.0).epsilon(0.02));
  const Tensor k = randint(-3, 4, {100000}, generator);
  CHECK(k.dtype() == DType::Int64);
  CHECK(min(k).item() == -3);
  CHECK(k.max().item() == 3);
  CHECK(std::fabs(k.to(DType::Float64).mean().item()) < 0.05);  // std of the mean: 0.006
}

TEST_CASE("a generator's state is its seed and offset") {
  Generator generator(9);
  randn({10}, generator);
  CHECK(generator.offset() == 10);
  Generator copy = generator;
  CHECK(randn({5}, copy).to_vector<float>() == randn({5}, generator).to_vector<float>());
  generator.manual_seed(9);
  CHECK(generator.offset() == 0);
}

// ---- the CPU kernels ---------------------------------------------------------------------------

using namespace testing::cpu_kernels;

TEST_CASE("philox 4x32-10 reproduces the published known answers") {
  // Random123's kat_vectors: counter, key -> output.
  static_assert(philox::philox4x32_10({{0, 0, 0, 0}}, 0, 0).w[0] == 0x6627e8d5u);
  const philox::Words zeros = philox::philox4x32_10({{0, 0, 0, 0}}, 0, 0);
  CHECK(zeros.w[0] == 0x6627e8d5u);
  CHECK(zeros.w[1] == 0xe169c58du);
  CHECK(zeros.w[2] == 0xbc57ac4cu);
  CHECK(zeros.w[3] == 0x9b00dbd8u);
  const philox::Words ones = philox::philox4x32_10(
      {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}}, 0xffffffffu, 0xffffffffu);
  CHECK(ones.w[0] == 0x408f276du);
  CHECK(ones.w[3] == 0x6d5451fdu);
  const philox::Words pi = philox::philox4x32_10(
      {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, 0xa4093822u, 0x299f31d0u);
  CHECK(pi.w[0] == 0xd16cfe09u);
  CHECK(pi.w[1] == 0x94fdccebu);
  CHECK(pi.w[2] == 0x5001e420u);
  CHECK(pi.w[3] == 0x24126ea1u);
}

TEST_CASE("cpu random: deterministic, counter-addressed, layout- and thread-independent") {
  const std::int64_t n = 100000;
  std::vector<float> first(n), second(n), shifted(n + 5);
  cpu().random(view(first, {n}), RandomKind::Normal, 42, 0, 0, 1);
  cpu().random(view(second, {n}), RandomKind::Normal, 42, 0, 0, 1);
  CHECK(first == second);
  cpu().random(view(second, {n}), RandomKind::Normal, 43, 0, 0, 1);
  CHECK(first != second);
  // Element i uses counter offset + i only.
  cpu().random(view(shifted, {n + 5}), RandomKind::Normal, 42, 0, 0, 1);
  cpu().random(view(second, {n}), RandomKind::Normal, 42, 5, 0, 1);
  CHECK(std::equal(second.begin(), second.end(), shifted.begin() + 5));
  // A transposed output receives the same numbers in logical row-major order.
  std::vector<double> contiguous(6), transposed(6);
  cpu().random(view(contiguous, {2, 3}), RandomKind::Uniform, 9, 0, 0, 1);
  cpu().random(view(transposed, {2, 3}, {1, 2}), RandomKind::Uniform, 9, 0, 0, 1);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) CHECK(transposed[i + 2 * j] == contiguous[i * 3 + j]);
  std::vector<double> one(n), two(n);
  with_threads(1, [&] { cpu().random(view(one, {n}), RandomKind::Uniform, 5, 7, -1, 1); });
  with_threads(2, [&] { cpu().random(view(two, {n}), RandomKind::Uniform, 5, 7, -1, 1); });
  CHECK(one == two);
}

TEST_CASE("cpu random: counters read from memory give the draw at (seed, base + offset)") {
  const std::uint64_t seed = 0x9e3779b97f4a7c15u;  // past int64's range: bits carried as they are
  std::vector<std::int64_t> cell = {std::bit_cast<std::int64_t>(seed), 1000};
  for (const RandomKind kind : {RandomKind::Uniform, RandomKind::Normal, RandomKind::Integer}) {
    INFO(static_cast<int>(kind));
    std::vector<double> expected(257), got(257);
    cpu().random(view(expected, {257}), kind, seed, 1000 + 13, -2, 3);
    cpu().random_with_counters(view(got, {257}), kind, view(cell, {2}), 13, -2, 3);
    CHECK(got == expected);
  }
  std::vector<std::int64_t> three(3);
  std::vector<double> cell64(2), out(4);
  CHECK_THROWS_WITH_AS(
      cpu().random_with_counters(view(out, {4}), RandomKind::Uniform, view(three, {3}), 0, 0, 1),
      doctest::Contains("counters must be a contiguous int64 tensor of 2 values"), Error);
  CHECK_THROWS_WITH_AS(
      cpu().random_with_counters(view(out, {4}), RandomKind::Uniform, view(cell64, {2}), 0, 0, 1),
      doctest::Contains("float64 of shape [2]"), Error);
}

namespace {

// The float32 uniform of one counter as random.cpp's header defines it, element by element.
float reference_uniform(std::uint64_t seed, std::uint64_t counter, double low, double high) {
  const double u = philox::uniform_float(philox::random_words(seed, counter).w[0]);
  float value = static_cast<float>(low + u * (high - low));
  const auto typed_high = static_cast<float>(high);
  if (high > low && !(value < typed_high))
    value = std::nextafter(typed_high, static_cast<float>(low));
  return value;
}

}  // namespace

TEST_CASE("cpu random: float32 uniforms eight at a time equal the element-by-element stream") {
  // (low, high): the unit interval, a shifted one, a reversed one (no nudging), and one so
  // narrow near 1 that a rounded value often reaches high and is nudged below it.
  const std::vector<std::pair<double, double>> ranges = {
      {0, 1}, {2, 5}, {-1, 1}, {1, -1}, {1.0, 1.0000001}};
  // Offsets whose counters cross 2^32 within a vector of 8 and at its edge.
  const std::vector<std::uint64_t> offsets = {0, 3, (1ull << 32) - 5, (1ull << 32) - 8,
                                              0xfffffffffffffff0ull};
  for (const auto& range : ranges) {
    const auto& low = range.first;
    const auto& high = range.second;
    for (std::uint64_t offset : offsets) {
      CAPTURE(low);
      CAPTURE(high);
      CAPTURE(offset);
      for (std::int64_t count : {0, 1, 7, 8, 9, 17, 64}) {
        std::vector<float> fast(static_cast<std::size_t>(count) + 1, -7.0f);
        if (!backend::cpu::uniform_floats_avx2(fast.data(), count, 0x123456789abcdefull, offset,
                                               low, high)) {
          MESSAGE("the CPU has no AVX2: only the element-by-element path runs here");
          return;
        }
        for (std::int64_t i = 0; i < count; ++i)
          REQUIRE(fast[i] == reference_uniform(0x123456789abcdefull,
                                               offset + static_cast<std::uint64_t>(i), low, high));
        CHECK(fast[count] == -7.0f);  // nothing written past the end
      }
    }
  }
  // Through the backend: contiguous rows take the eight-at-a-time path, a transposed output
  // the element loop; both give every logical element its counter's value.
  const std::int64_t rows = 37, columns = 53;
  std::vector<float> contiguous(rows * columns), transposed(rows * columns);
  for (int threads : {1, 2}) {
    with_threads(threads, [&] {
      cpu().random(view(contiguous, {rows, columns}), RandomKind::Uniform, 11, 5, 1.0, 1.0000001);
      cpu().random(view(transposed, {rows, columns}, {1, rows}), RandomKind::Uniform, 11, 5, 1.0,
                   1.0000001);
    });
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < columns; ++j) {
        const float expected = reference_uniform(11, 5 + i * columns + j, 1.0, 1.0000001);
        REQUIRE(contiguous[i * columns + j] == expected);
        REQUIRE(transposed[i + j * rows] == expected);
      }
  }
}

TEST_CASE("cpu random: moments and ranges of uniform, normal and integer draws") {
  const std::int64_t n = 100000;
  const auto moments = [](const auto& values) {
    double mean = 0, square = 0;
    for (double v : values) mean += v;
    mean /= values.size();
    for (double v : values) square += (v - mean) * (v - mean);
    return std::pair<double, double>{mean, square / values.size()};
  };
  std::vector<float> uniform32(n);
  cpu().random(view(uniform32, {n}), RandomKind::Uniform, 1, 0, 2, 5);
  CHECK(*std::min_element(uniform32.begin(), uniform32.end()) >= 2.0f);
  CHECK(*std::max_element(uniform32.begin(), uniform32.end()) < 5.0f);
  CHECK(moments(uniform32).first == doctest::Approx(3.5).epsilon(0.01));
  CHECK(moments(uniform32).second == doctest::Approx(0.75).epsilon(0.02));  // (5 - 2)^2 / 12
  std::vector<double> uniform64(n);
  cpu().random(view(uniform64, {n}), RandomKind::Uniform, 2, 0, 0, 1);
  CHECK(moments(uniform64).first == doctest::Approx(0.5).epsilon(0.01));
  CHECK(moments(uniform64).second == doctest::Approx(1.0 / 12).epsilon(0.02));
  for (auto dtype_case : {0, 1}) {
    std::vector<double> normal(n);
    if (dtype_case == 0) {
      cpu().random(view(normal, {n}), RandomKind::Normal, 3, 0, 1.5, 2);
    } else {
      std::vector<float> normal32(n);
      cpu().random(view(normal32, {n}), RandomKind::Normal, 3, 0, 1.5, 2);
      normal.assign(normal32.begin(), normal32.end());
    }
    CHECK(std::fabs(moments(normal).first - 1.5) < 0.03);  // std of the mean: 0.0063
    CHECK(moments(normal).second == doctest::Approx(4.0).epsilon(0.03));
  }
  std::vector<std::int64_t> integers(n);
  cpu().random(view(integers, {n}), RandomKind::Integer, 4, 0, -3, 4);
  CHECK(*std::min_element(integers.begin(), integers.end()) == -3);
  CHECK(*std::max_element(integers.begin(), integers.end()) == 3);
  CHECK(std::fabs(moments(integers).first) < 0.05);
  std::vector<float> float_integers(1000);
  cpu().random(view(float_integers, {1000}), RandomKind::Integer, 4, 0, 0, 10);
  for (float v : float_integers) CHECK((v >= 0 && v <= 9 && v == std::floor(v)));
  CHECK_THROWS_AS(cpu().random(view(integers, {n}), RandomKind::Normal, 4, 0, 0, 1),
                  normgrad::Error);
}

// ---- on a GPU: CPU against CUDA ----------------------------------------------------------------

// Random numbers on the GPU are the CPU's: the generator is counter-based (Philox,
// core/generator.h), so value i of a draw depends only on (seed, offset + i), not on the device
// or the thread layout. Uniform and integer draws are bit-identical; normal draws agree to the
// last bits of the maths libraries' log and cos (testing::normal_draws). Checked for rand, randn
// and randint in each dtype and at sizes that leave partial blocks, for draws split at odd
// offsets, for dropout masks (through nn::Dropout and the attention dropout) and for
// GaussianNoise; and a draw that reads its seed and offset from device memory (as a CUDA graph
// records draws).

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

// ---- bfloat16 ----------------------------------------------------------------------------------

using namespace testing::bfloat16_checks;

// Random draws into bfloat16 are the float32 draws of the same counters rounded once. Rounding
// carries the uniform draws just below the end onto it (measured: 388 of these 200,000 on
// [0, 1), 313 on [-2, 3)): those take the bfloat16 below the end instead, so the draws stay in
// [low, high).
TEST_CASE("random draws into bfloat16 are float32's rounded, and uniform ones stay below the end") {
  backend::Backend& cpu = backend::cpu_backend();
  struct Interval {
    double low, high, below;  // below: the bfloat16 next below high
  };
  for (const Interval& interval : {Interval{0, 1, 0.99609375}, Interval{-2, 3, 2.984375}}) {
    CAPTURE(interval.high);
    const Tensor drawn = empty({200000}, {.dtype = DType::BFloat16}), twin = empty({200000});
    cpu.random(detail::ref(drawn), backend::RandomKind::Uniform, 5, 0, interval.low, interval.high);
    cpu.random(detail::ref(twin), backend::RandomKind::Uniform, 5, 0, interval.low, interval.high);
    const Tensor rounded = bf16(twin);
    const Tensor at_end = eq(f32(rounded), interval.high);
    CHECK(at_end.sum().item() > 0);                  // the case arises
    CHECK(f32(drawn).max().item() < interval.high);  // and is kept below the end
    CHECK(min(f32(drawn)).item() >= interval.low);
    CHECK(same_bits(where(at_end, bf16(full({200000}, interval.below)), rounded), drawn));
  }
  Generator narrow(6), wide(6);
  // Normal and integer draws: float32's, rounded.
  CHECK(same_bits(randn({5000}, narrow, {.dtype = DType::BFloat16}), bf16(randn({5000}, wide))));
  CHECK(same_bits(randint(-3, 300, {5000}, narrow, {.dtype = DType::BFloat16}),
                  bf16(randint(-3, 300, {5000}, wide, {.dtype = DType::Float32}))));
}

TEST_CASE("dropout on bfloat16 keeps float32's elements and scales them by 1 / (1 - p)") {
  Generator data(12);
  const Tensor x = bf16(randn({64, 33}, data));
  for (const double p : {0.1, 0.3, 0.5}) {
    CAPTURE(p);
    Generator a(5), b(5);
    Tensor half = x.clone().requires_grad_(), single = f32(x).requires_grad_();
    const Tensor y = nn::functional::dropout(half, p, true, a);
    const Tensor y32 = nn::functional::dropout(single, p, true, b);
    // The same draws keep the same elements; each kept value is scaled in float32 and rounded
    // once, with no bias from a rounded scale (0.1: 1.109375 in bfloat16 against 1.1111).
    CHECK(y.dtype() == DType::BFloat16);
    CHECK(same_bits(y, bf16(y32)));
    const Tensor upstream = bf16(randn({64, 33}, data));
    y.backward(upstream);
    y32.backward(f32(upstream));
    CHECK(same_bits(half.grad(), bf16(single.grad())));
  }
}
