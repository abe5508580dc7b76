// ProcessGroup on two ranks (mpirun -np 2): every rank runs every case in the same order and
// checks the values it ends with.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <normgrad/normgrad.h>

#include <string>
#include <vector>

#include "distributed/process_group.h"
#include "helpers.h"

namespace ng = normgrad;
namespace dist = normgrad::distributed;

namespace {

dist::ProcessGroup& group() { return dist::ProcessGroup::world(); }

// [0, 1, ..., n-1] * (rank + 1), in `dtype`.
ng::Tensor ramp(std::int64_t n, ng::DType dtype) {
  std::vector<double> values;
  for (std::int64_t i = 0; i < n; ++i)
    values.push_back(static_cast<double>(i) * (group().rank() + 1));
  return ng::from_vector(values, {n}).to(dtype);
}

// The sum over ranks of (rank + 1): 1 + 2 + ... + size.
double rank_sum() { return group().size() * (group().size() + 1) / 2.0; }

}  // namespace

TEST_CASE("the group: two ranks, each with its own number") {
  REQUIRE(dist::is_available());
  CHECK(group().size() == 2);
  const ng::Tensor ranks =
      group().all_gather(ng::from_vector(std::vector<std::int64_t>{group().rank()}, {1}));
  CHECK(ranks.shape() == ng::Shape{group().size(), 1});
  const std::vector<std::int64_t> values = ranks.to_vector<std::int64_t>();
  for (int r = 0; r < group().size(); ++r) CHECK(values[static_cast<std::size_t>(r)] == r);
  group().barrier();
}

TEST_CASE("all_reduce sums and averages in place, in every dtype") {
  for (const ng::DType dtype : {ng::DType::Float32, ng::DType::Float64, ng::DType::Int64}) {
    ng::Tensor sum = ramp(1000, dtype);
    group().all_reduce(sum);
    const std::vector<double> summed = sum.to_vector<double>();
    for (std::size_t i = 0; i < summed.size(); ++i)
      CHECK(summed[i] == doctest::Approx(static_cast<double>(i) * rank_sum()));
  }
  ng::Tensor mean = ramp(7, ng::DType::Float64).reshape({7});
  group().all_reduce(mean, dist::ReduceOp::Mean);
  const std::vector<double> averaged = mean.to_vector<double>();
  for (std::size_t i = 0; i < averaged.size(); ++i)
    CHECK(averaged[i] == doctest::Approx(static_cast<double>(i) * rank_sum() / group().size()));
  // A contiguous slice of a larger tensor is reduced where it lies, the rest untouched.
  ng::Tensor whole = ramp(10, ng::DType::Float32);
  group().all_reduce(whole.narrow(0, 2, 3));
  const std::vector<float> values = whole.to_vector<float>();
  CHECK(values[1] == doctest::Approx(1.0 * (group().rank() + 1)));
  CHECK(values[3] == doctest::Approx(3.0 * rank_sum()));
  CHECK(values[5] == doctest::Approx(5.0 * (group().rank() + 1)));
}

TEST_CASE("broadcast copies the root's tensor to every rank") {
  for (int root = 0; root < group().size(); ++root) {
    ng::Tensor t = ramp(5, ng::DType::Float32).reshape({5, 1});
    group().broadcast(t, root);
    const std::vector<float> values = t.to_vector<float>();
    for (std::size_t i = 0; i < values.size(); ++i)
      CHECK(values[i] == doctest::Approx(static_cast<double>(i) * (root + 1)));
  }
}

TEST_CASE("all_gather stacks the ranks' tensors in rank order") {
  const ng::Tensor gathered = group().all_gather(ramp(6, ng::DType::Float64).reshape({2, 3}));
  CHECK(gathered.shape() == ng::Shape{group().size(), 2, 3});
  const std::vector<double> values = gathered.to_vector<double>();
  for (int r = 0; r < group().size(); ++r)
    for (std::size_t i = 0; i < 6; ++i)
      CHECK(values[static_cast<std::size_t>(r) * 6 + i] ==
            doctest::Approx(static_cast<double>(i) * (r + 1)));
}

TEST_CASE("ranks that disagree get an Error on every rank, naming each rank's tensor") {
  // Shapes that differ by rank: all_reduce would mix up data or hang; it throws instead.
  const ng::Tensor uneven = ng::zeros({3 + group().rank()});
  CHECK_ERROR(group().all_reduce(uneven), "all_reduce on rank",
              "of one dtype, shape and kind of device", "rank 0: float32 [3]",
              "rank 1: float32 [4]");
  // A dtype that differs, in broadcast.
  const ng::Tensor mixed =
      ng::zeros({2}).to(group().rank() == 0 ? ng::DType::Float32 : ng::DType::Float64);
  CHECK_ERROR(group().broadcast(mixed, 0), "broadcast", "rank 0: float32 [2]",
              "rank 1: float64 [2]");
  // A tensor that is not contiguous on one rank only.
  const ng::Tensor square = ng::zeros({3, 3});
  const ng::Tensor strided = group().rank() == 1 ? square.transpose(0, 1) : square;
  CHECK_ERROR(group().all_reduce(strided), "(not contiguous)");
  CHECK_ERROR(group().broadcast(ng::zeros({1}), 5), "root 5 is not a rank");
  CHECK_ERROR(group().all_reduce(ng::zeros({2}).to(ng::DType::Int64), dist::ReduceOp::Mean),
              "mean of int64");
  // The group still works after all of that.
  ng::Tensor one = ng::ones({1});
  group().all_reduce(one);
  CHECK(one.item() == doctest::Approx(group().size()));
}

TEST_CASE("NCCL: CUDA tensors are reduced, broadcast and gathered on the GPUs") {
  const int gpus = ng::cuda::is_available() ? ng::cuda::device_count() : 0;
  if (!dist::collectives_on(ng::Device::cuda()) || gpus < group().size()) {
    MESSAGE("skipped: needs NCCL and a GPU per rank (" << gpus << " GPUs for " << group().size()
                                                       << " ranks)");
    return;
  }
  const ng::Device gpu = ng::Device::cuda(group().rank());
  for (const ng::DType dtype : {ng::DType::Float32, ng::DType::Float64, ng::DType::Int64}) {
    ng::Tensor sum = ramp(1000, dtype).to(gpu);
    group().all_reduce(sum);
    CHECK(sum.device() == gpu);
    const std::vector<double> summed = sum.to_vector<double>();
    for (std::size_t i = 0; i < summed.size(); i += 99)
      CHECK(summed[i] == doctest::Approx(static_cast<double>(i) * rank_sum()));
  }
  ng::Tensor mean = ramp(7, ng::DType::Float32).to(gpu);
  group().all_reduce(mean, dist::ReduceOp::Mean);
  CHECK(mean.to_vector<double>()[3] == doctest::Approx(3.0 * rank_sum() / group().size()));
  // The same as the CPU's, through the asynchronous call DataParallel uses.
  ng::Tensor on_gpu = ramp(4096, ng::DType::Float32).to(gpu);
  ng::Tensor on_cpu = ramp(4096, ng::DType::Float32);
  group().all_reduce_async(on_gpu).wait();
  group().all_reduce(on_cpu);
  CHECK(testing::all_close(on_gpu, on_cpu.to_vector<double>(), 0, 0));
  ng::Tensor shared = ramp(5, ng::DType::Float32).to(gpu);
  group().broadcast(shared, group().size() - 1);
  CHECK(shared.to_vector<double>()[2] == doctest::Approx(2.0 * group().size()));
  const ng::Tensor gathered = group().all_gather(ramp(3, ng::DType::Float64).to(gpu));
  CHECK(gathered.shape() == ng::Shape{group().size(), 3});
  CHECK(gathered.to_vector<double>().back() == doctest::Approx(2.0 * group().size()));
}
