// Sizes from users never wrap around: element counts, strides and byte counts are checked
// (base/checked.h), and what cannot be held is refused with an Error naming the op and the
// shape, before any memory is touched.

#include <cstdint>
#include <limits>

#include "helpers.h"

using namespace normgrad;

namespace {
constexpr std::int64_t two_to(int power) { return std::int64_t{1} << power; }
}  // namespace

TEST_CASE("factories refuse shapes whose element or byte count overflows") {
  // 2^62 + 1 float32 values: the count fits in int64, its bytes (x4) do not.
  CHECK_ERROR(zeros({two_to(62) + 1}), "zeros", "[4611686018427387905]", "2^48");
  // 2^32 x 2^32 = 2^64 elements: used to wrap to 0 and return a tensor with no storage.
  CHECK_ERROR(zeros({two_to(32), two_to(32)}), "zeros", "[4294967296, 4294967296]", "int64");
  CHECK_ERROR(ones({two_to(32), two_to(32)}), "ones", "int64");
  CHECK_ERROR(full({two_to(32), two_to(32)}, 1.0), "full", "int64");
  CHECK_ERROR(empty({two_to(62), 4}), "empty", "int64");
  CHECK_ERROR(rand({two_to(40), two_to(30)}), "rand", "int64");
  CHECK_ERROR(randn({two_to(50)}), "randn", "[1125899906842624]", "2^48");
  CHECK_ERROR(randint(0, 5, {two_to(50)}), "randint", "2^48");
  // An empty shape still has strides, and those must not wrap either.
  CHECK_ERROR(zeros({0, two_to(40), two_to(40)}), "zeros", "[0, 1099511627776, 1099511627776]");
  // A negative size is named with its shape.
  CHECK_ERROR(empty({3, -2}), "empty", "[3, -2]", "non-negative");
}

TEST_CASE("views and joins refuse shapes that overflow") {
  // expand makes a view with no storage of its own: its count must still fit.
  CHECK_ERROR(randn({1}).expand({two_to(32), two_to(32)}), "expand", "[4294967296, 4294967296]");
  // A view that fits but is too large to copy: contiguous() refuses it cleanly.
  const Tensor huge_view = randn({1}).expand({two_to(40), two_to(20)});
  CHECK(huge_view.numel() == two_to(60));
  CHECK_ERROR(huge_view.contiguous(), "contiguous", "2^48", "[1099511627776, 1048576]");
  // reshape's -1 inference multiplies the known sizes; that product used to wrap.
  CHECK_ERROR(zeros({0}).reshape({-1, two_to(40), two_to(40)}), "reshape", "int64");
  CHECK_ERROR(zeros({0}).view({two_to(40), -1, two_to(40)}), "view", "int64");
  // cat adds sizes along its dim.
  const Tensor half = randn({1}).expand({two_to(62)});
  CHECK_ERROR(cat({half, half}, 0), "cat", "int64");
  CHECK_ERROR(split(zeros({2}), {std::numeric_limits<std::int64_t>::max(), 3}, 0), "split",
              "int64");
}

TEST_CASE("arange checks its element count before converting it to an integer") {
  // 1e30 steps: converting that double to int64 was undefined behaviour.
  CHECK_ERROR(arange(0, 1e30), "arange", "1e+30", "elements");
  CHECK_ERROR(arange(-1e300, 1e300, 1e-300), "arange", "elements");
  // Countable, but more bytes than a tensor may hold.
  CHECK_ERROR(arange(0, 0x1p50), "arange", "2^48");
  CHECK(arange(0, 5).numel() == 5);
  CHECK(arange(5, 0).numel() == 0);
}

TEST_CASE("an allocation the machine cannot make is an Error with the figures") {
  // 2^47 bytes (128 TiB) is under the 2^48 cap but far beyond this or any test machine's
  // memory: the allocator returns nothing, and the factory says how much was asked for.
  CHECK_ERROR(zeros({two_to(45)}), "zeros", "140737488355328 bytes", "[35184372088832]");
  // The failed attempt leaves the statistics as they were, and the next allocation works.
  const MemoryStats stats = memory_stats();
  CHECK(stats.peak_allocated_bytes < (std::size_t{1} << 40));
  CHECK(zeros({1 << 20, 64}).numel() == two_to(26));
}

TEST_CASE("large shapes that fit are still made") {
  CHECK(numel({two_to(31), two_to(31)}) == two_to(62));
  CHECK(contiguous_strides({two_to(20), two_to(20), 4}) == Strides{two_to(22), 4, 1});
  CHECK(zeros({0, two_to(40)}).numel() == 0);
  CHECK(randn({1}).expand({two_to(31), two_to(31)}).numel() == two_to(62));
  CHECK(zeros({4, 0, 3}).reshape({-1, 3}).shape() == Shape{0, 3});
}

TEST_CASE("to_vector of an empty tensor, with and without a dtype conversion") {
  // Under UBSan the converting path used to hand memcpy the null data of an empty vector.
  CHECK(zeros({0}).to_vector<double>().empty());
  CHECK(zeros({0, 3}).to_vector<float>().empty());
  CHECK(zeros({2, 0}, {.dtype = DType::Float64}).to_vector<std::int64_t>().empty());
}

TEST_CASE("a loaded Adam state with out-of-range step counters is refused") {
  Tensor weight = zeros({3}, {.requires_grad = true});
  optim::Adam adam({weight}, {.lr = 0.1});
  nn::StateDict state = adam.state_dict();
  for (const std::int64_t bad : {std::numeric_limits<std::int64_t>::max(), std::int64_t{-1}}) {
    state["steps"] = from_vector(std::vector<std::int64_t>{bad}, {1});
    const std::string value = std::to_string(bad);
    CHECK_ERROR(adam.load_state_dict(state), "Adam", "steps", value.c_str(), "2^53");
  }
  CHECK(adam.step_count(0) == 0);  // refused states change nothing
  state["steps"] = from_vector(std::vector<std::int64_t>{two_to(53)}, {1});
  adam.load_state_dict(state);
  CHECK(adam.step_count(0) == two_to(53));
}

TEST_CASE("a norm spec with a non-finite eps is refused") {
  CHECK_ERROR(nn::NormSpec::parse("rmsnorm,eps=inf"), "NormSpec", "eps", "inf", "finite");
  CHECK_ERROR(nn::NormSpec::parse("layernorm,eps=nan"), "NormSpec", "eps", "nan");
  CHECK_ERROR(nn::NormSpec::parse("layernorm,eps=-1e-5"), "NormSpec", "eps", "-1e-5");
  CHECK_ERROR(nn::NormSpec::parse("prmsnorm:nan"), "NormSpec", "(0, 1]");
  CHECK_ERROR(nn::NormSpec::parse("prmsnorm:inf"), "NormSpec", "(0, 1]");
  CHECK(*nn::NormSpec::parse("rmsnorm,eps=0").eps == 0.0);
}
