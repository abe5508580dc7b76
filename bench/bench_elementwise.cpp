// Memory-bound ops (elementwise, broadcast, reductions, softmax) against the machine's memory
// bandwidth, measured in the same run.
//
// Tensors of 4096 x 4096 float32 are 64 MiB, twice the last-level cache of the machine this was
// written on, so every op streams from memory and its speed is bytes moved per second. Each
// benchmark reports the bytes it must read plus the bytes it must write (SetBytesProcessed),
// the same accounting as the ceilings (memcpy, memcpy over 2 threads and the STREAM triad,
// in bench_common.h; add's traffic is the triad's).
// normgrad's ops allocate their output inside the timed loop, because a user pays for that on
// every call. Two references separate that cost from the op's own: memcpy_fresh_destination
// copies into a plain aligned_alloc buffer allocated and freed on every iteration (glibc serves
// 64 MiB with a fresh mmap, whose pages fault in on first write), and add_inplace is add with
// no allocation at all. softmax runs on [4096, 1024] (16 MiB in, 16 MiB out), so input and
// output together are about the size of the last-level cache.
// Wall time throughout, since the work is threaded; sizing runs serve as warm-up.

#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

#include "bench_common.h"

namespace {

using normgrad::Tensor;
using normgrad::bench::aligned_buffer;
using normgrad::bench::Buffer;
using normgrad::bench::set_bytes;
using normgrad::bench::touched_buffer;

constexpr std::int64_t rows = 4096, columns = 4096;
constexpr std::int64_t elements = rows * columns;  // 16M floats, 64 MiB
constexpr std::int64_t tensor_bytes = elements * static_cast<std::int64_t>(sizeof(float));
constexpr std::int64_t row_bytes = columns * static_cast<std::int64_t>(sizeof(float));
constexpr std::int64_t softmax_rows = 4096, softmax_columns = 1024;
constexpr std::int64_t softmax_bytes =
    softmax_rows * softmax_columns * static_cast<std::int64_t>(sizeof(float));

// ---- references ------------------------------------------------------------------------------

void memcpy_fresh_destination(benchmark::State& state) {
  const Buffer source = touched_buffer(elements, 1.0f);
  for (auto _ : state) {
    Buffer destination = aligned_buffer(elements);
    std::memcpy(destination.get(), source.get(), tensor_bytes);
    benchmark::DoNotOptimize(destination.get());
    benchmark::ClobberMemory();
  }
  set_bytes(state, 2 * tensor_bytes);
}

// ---- normgrad ---------------------------------------------------------------------------------

using Inputs = std::vector<Tensor>;

// Times `op` on tensors built (outside the timed loop) by `setup`; bytes as documented above.
void normgrad_op(benchmark::State& state, std::int64_t bytes_per_iteration,
                 const std::function<Inputs()>& setup,
                 const std::function<Tensor(const Inputs&)>& op) {
  normgrad::NoGradGuard no_grad;
  const Inputs inputs = setup();
  for (auto _ : state) {
    Tensor result = op(inputs);
    benchmark::DoNotOptimize(result.data_ptr<float>());
  }
  set_bytes(state, bytes_per_iteration);
}

Inputs one_matrix() { return {normgrad::randn({rows, columns})}; }
Inputs two_matrices() {
  return {normgrad::randn({rows, columns}), normgrad::randn({rows, columns})};
}
Inputs matrix_and_row() { return {normgrad::randn({rows, columns}), normgrad::randn({columns})}; }
Inputs softmax_input() { return {normgrad::randn({softmax_rows, softmax_columns})}; }

void register_benchmarks() {
  const auto add = [](const char* name, auto function) {
    benchmark::RegisterBenchmark(name, function)->UseRealTime()->Unit(benchmark::kMillisecond);
  };
  const auto add_op = [&](const char* name, std::int64_t bytes, auto setup, auto op) {
    add(name, [=](benchmark::State& state) { normgrad_op(state, bytes, setup, op); });
  };
  normgrad::bench::register_bandwidth_ceilings();
  add("memcpy_fresh_destination/64MiB", memcpy_fresh_destination);

  // add reads a and b and writes the sum; add_ writes the sum over a.
  add_op("add/4096x4096", 3 * tensor_bytes, two_matrices,
         [](const Inputs& t) { return normgrad::add(t[0], t[1]); });
  add_op("add_inplace/4096x4096", 3 * tensor_bytes, two_matrices, [](const Inputs& t) {
    Tensor target = t[0];
    target.add_(t[1]);
    return target;
  });
  // The row operand is one 16 KiB row, read from cache for every row of the matrix.
  add_op("mul_broadcast_row/4096x4096", 2 * tensor_bytes + row_bytes, matrix_and_row,
         [](const Inputs& t) { return normgrad::mul(t[0], t[1]); });
  add_op("exp/4096x4096", 2 * tensor_bytes, one_matrix,
         [](const Inputs& t) { return normgrad::exp(t[0]); });
  add_op("relu/4096x4096", 2 * tensor_bytes, one_matrix,
         [](const Inputs& t) { return normgrad::relu(t[0]); });
  // Reductions read the input once and write a scalar or one row.
  add_op("sum_all/4096x4096", tensor_bytes, one_matrix,
         [](const Inputs& t) { return normgrad::sum(t[0]); });
  add_op("sum_last_dim/4096x4096", tensor_bytes + row_bytes, one_matrix,
         [](const Inputs& t) { return normgrad::sum(t[0], {-1}); });
  add_op("sum_dim0/4096x4096", tensor_bytes + row_bytes, one_matrix,
         [](const Inputs& t) { return normgrad::sum(t[0], {0}); });
  add_op("softmax_last_dim/4096x1024", 2 * softmax_bytes, softmax_input,
         [](const Inputs& t) { return normgrad::softmax(t[0], -1); });
}

}  // namespace

int main(int argc, char** argv) {
  register_benchmarks();
  return normgrad::bench::run_benchmark_main(argc, argv);
}
