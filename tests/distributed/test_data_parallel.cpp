// DataParallel on two ranks: each rank's half of a batch gives, after the ranks have averaged
// their gradients, the steps one process takes on the whole batch.
#include <doctest/doctest.h>
#include <normgrad/normgrad.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "distributed/data_parallel.h"
#include "helpers.h"

namespace ng = normgrad;
namespace dist = normgrad::distributed;

namespace {

dist::ProcessGroup& group() { return dist::ProcessGroup::world(); }

// A small classifier with a norm inside, and a side branch that a forward pass may skip.
struct Net : ng::nn::Module {
  std::shared_ptr<ng::nn::Linear> input, output, side;
  std::shared_ptr<ng::nn::RMSNorm> norm;

  // Different seeds give different weights: DataParallel must make rank 0's everyone's.
  explicit Net(std::uint64_t seed, std::int64_t hidden = 8) {
    ng::manual_seed(seed);
    input = register_module("input", std::make_shared<ng::nn::Linear>(4, hidden));
    norm = register_module("norm", std::make_shared<ng::nn::RMSNorm>(ng::Shape{hidden}));
    output = register_module("output", std::make_shared<ng::nn::Linear>(hidden, 3));
    side = register_module("side", std::make_shared<ng::nn::Linear>(4, 3));
  }

  ng::Tensor forward(const ng::Tensor& x, bool use_side) {
    ng::Tensor logits = output->forward(norm->forward(input->forward(x)).tanh());
    return use_side ? logits + side->forward(x) : logits;
  }
};

// The whole batch: 8 rows, the same on every rank.
struct Batch {
  ng::Tensor x, y;
  Batch rows(std::int64_t start, std::int64_t count) const {
    return {x.narrow(0, start, count), y.narrow(0, start, count)};
  }
};

Batch whole_batch() {
  ng::Generator generator(7);
  return {ng::randn({8, 4}, generator),
          ng::from_vector(std::vector<std::int64_t>{0, 1, 2, 0, 1, 2, 2, 1}, {8})};
}

ng::Tensor loss_of(Net& net, const Batch& batch, bool use_side = true) {
  return ng::nn::cross_entropy(net.forward(batch.x, use_side), batch.y);
}

// Every parameter of `a` within tolerance of `b`'s.
void check_same_parameters(const Net& a, const Net& b, double tolerance) {
  const auto theirs = b.named_parameters();
  const auto ours = a.named_parameters();
  REQUIRE(ours.size() == theirs.size());
  for (std::size_t i = 0; i < ours.size(); ++i) {
    INFO(ours[i].first);
    CHECK(testing::all_close(ours[i].second, theirs[i].second.to_vector<double>(), tolerance,
                             tolerance));
  }
}

// Five SGD steps with momentum side by side: `reference` (one process) on the whole batch,
// `replica` (under `parallel`) on this rank's `share`; `after_step` checks each replica step.
void train_side_by_side(Net& reference, Net& replica, const Batch& whole, const Batch& share,
                        const std::function<void()>& after_step = {}) {
  ng::optim::SGD reference_sgd(reference.parameters(), {.lr = 0.5, .momentum = 0.9});
  ng::optim::SGD replica_sgd(replica.parameters(), {.lr = 0.5, .momentum = 0.9});
  for (int step = 0; step < 5; ++step) {
    reference.zero_grad();
    loss_of(reference, whole).backward();
    reference_sgd.step();
    replica.zero_grad();
    loss_of(replica, share).backward();
    replica_sgd.step();
    if (after_step) after_step();
  }
}

}  // namespace

TEST_CASE("DataParallel: half a batch on each of two ranks steps as the whole batch does") {
  REQUIRE(group().size() == 2);
  const Batch batch = whole_batch();
  // Each bucket size: one bucket for everything, and a bucket per tensor or two.
  for (const std::int64_t bucket_bytes : {std::int64_t{25} << 20, std::int64_t{100}}) {
    INFO("bucket_bytes " << bucket_bytes);
    Net reference(1);                 // one process, the whole batch
    Net replica(1 + group().rank());  // this rank's, made equal to rank 0's below
    dist::DataParallel parallel(replica, {.bucket_bytes = bucket_bytes});
    check_same_parameters(replica, reference, 0.0);
    train_side_by_side(reference, replica, batch, batch.rows(4 * group().rank(), 4), [&] {
      // Every gradient arrives during backward: every bucket goes before it ends.
      CHECK(parallel.last_pass().buckets_sent_early == parallel.bucket_names().size());
      CHECK(parallel.last_pass().seconds_waited >= 0);
    });
    check_same_parameters(replica, reference, 1e-5);
  }
}

TEST_CASE("DataParallel: no_sync accumulates locally, and the next pass averages the sums") {
  const Batch batch = whole_batch();
  Net reference(3);
  Net replica(3);
  dist::DataParallel parallel(replica, {.bucket_bytes = 200});
  ng::optim::SGD reference_sgd(reference.parameters(), {.lr = 0.5});
  ng::optim::SGD replica_sgd(replica.parameters(), {.lr = 0.5});
  for (int step = 0; step < 3; ++step) {
    reference.zero_grad();
    loss_of(reference, batch).backward();
    reference_sgd.step();
    // This rank's half in two quarters: the first inside no_sync, where the gradients stay
    // this rank's own.
    replica.zero_grad();
    const std::int64_t start = 4 * group().rank();
    {
      const auto local = parallel.no_sync();
      (loss_of(replica, batch.rows(start, 2)) * 0.5).backward();
    }
    const ng::Tensor local_grad = replica.output->weight.grad().clone();
    ng::Tensor mine = local_grad.clone();
    group().all_reduce(mine);
    CHECK_FALSE(testing::all_close(local_grad, mine.to_vector<double>() /* the sum differs */));
    (loss_of(replica, batch.rows(start + 2, 2)) * 0.5).backward();
    replica_sgd.step();
  }
  check_same_parameters(replica, reference, 1e-5);
}

TEST_CASE("DataParallel: a parameter unused on one rank counts as a zero there") {
  const Batch batch = whole_batch();
  Net replica(5);
  Net local(5);  // the same model without DataParallel: this rank's own gradients
  dist::DataParallel parallel(replica, {.bucket_bytes = 64});
  // Rank 1 takes the side branch, rank 0 does not.
  const bool use_side = group().rank() == 1;
  const Batch mine = batch.rows(4 * group().rank(), 4);
  loss_of(local, mine, use_side).backward();
  loss_of(replica, mine, use_side).backward();
  // The side branch's bucket is the first to go: on rank 0, which gives it no gradient, it
  // and every bucket after it wait for the end of backward.
  REQUIRE(parallel.bucket_names().front().front() == "side.bias");
  CHECK(parallel.last_pass().buckets_sent_early == (use_side ? parallel.bucket_names().size() : 0));
  const auto expected = local.named_parameters();
  const auto actual = replica.named_parameters();
  for (std::size_t i = 0; i < expected.size(); ++i) {
    INFO(expected[i].first);
    ng::Tensor own = expected[i].second.grad().defined() ? expected[i].second.grad().clone()
                                                         : ng::zeros_like(expected[i].second);
    group().all_reduce(own, dist::ReduceOp::Mean);
    REQUIRE(actual[i].second.grad().defined());
    CHECK(testing::all_close(actual[i].second.grad(), own.to_vector<double>(), 1e-6, 1e-7));
  }
  // A branch that no rank takes leaves its parameters without gradients on every rank.
  replica.zero_grad();
  loss_of(replica, mine, false).backward();
  CHECK_FALSE(replica.side->weight.grad().defined());
  CHECK(replica.input->weight.grad().defined());
}

TEST_CASE("DataParallel: buckets hold the parameters in reverse order, within their size") {
  Net net(1);
  // Bytes: side.bias 12, side.weight 48, output.bias 12 (72 in all, and output.weight's 96
  // would pass 100); norm.gain 32 and input.bias 32; input.weight 128, alone past the limit.
  dist::DataParallel parallel(net, {.bucket_bytes = 100});
  const std::vector<std::vector<std::string>> expected{{"side.bias", "side.weight", "output.bias"},
                                                       {"output.weight"},
                                                       {"norm.gain", "input.bias"},
                                                       {"input.weight"}};
  const auto buckets = parallel.bucket_names();
  std::string listed;
  for (const auto& bucket : buckets) {
    listed += "[";
    for (const std::string& name : bucket) listed += name + " ";
    listed += "] ";
  }
  INFO(listed);
  CHECK(buckets == expected);
  dist::DataParallel one_bucket(net);
  CHECK(one_bucket.bucket_names().size() == 1);
}

TEST_CASE("DataParallel: ranks whose models differ stop with an Error on every rank") {
  // A hidden size that differs: rank 1's input.weight is [9, 4] where rank 0's is [8, 4].
  Net shapes(1, 8 + group().rank());
  CHECK_ERROR(dist::DataParallel(shapes), "models differ",
              "parameter input.weight is float32 [8, 4] on rank 0 but float32 [9, 4] on rank 1");
  // A parameter that only rank 0 has.
  struct Extra : Net {
    explicit Extra(bool extra) : Net(1) {
      if (extra) register_parameter("extra", ng::zeros({2}));
    }
  };
  Extra extra(group().rank() == 0);
  CHECK_ERROR(dist::DataParallel(extra), "models differ",
              "rank 1 lacks rank 0's parameter extra (float32 [2])");
  // The same parameters, registered in another order on rank 1: the buckets would not line up.
  struct Reordered : ng::nn::Module {
    explicit Reordered(bool swap) {
      register_parameter(swap ? "b" : "a", ng::zeros({2}));
      register_parameter(swap ? "a" : "b", ng::zeros({2}));
    }
  };
  Reordered reordered(group().rank() == 1);
  CHECK_ERROR(dist::DataParallel(reordered), "another order",
              "entry 0 is parameter a on rank 0 but parameter b on rank 1");
  // The group still works.
  ng::Tensor one = ng::ones({1});
  group().all_reduce(one);
  CHECK(one.item() == doctest::Approx(2.0));
}

TEST_CASE("DataParallel on GPUs (NCCL): half batches step as the whole batch on the CPU does") {
  const int gpus = ng::cuda::is_available() ? ng::cuda::device_count() : 0;
  if (gpus < group().size()) {
    MESSAGE("skipped: needs a GPU per rank (" << gpus << " GPUs for " << group().size()
                                              << " ranks)");
    return;
  }
  const ng::Device gpu = ng::Device::cuda(group().rank());
  const Batch batch = whole_batch();
  const std::int64_t share = 8 / group().size();
  const Batch mine = batch.rows(share * group().rank(), share);
  const Batch on_gpu{mine.x.to(gpu), mine.y.to(gpu)};
  Net reference(11);  // one process, the whole batch, on the CPU
  Net replica(11 + group().rank());
  replica.to(gpu);
  dist::DataParallel parallel(replica, {.bucket_bytes = 100});
  train_side_by_side(reference, replica, batch, on_gpu);
  replica.to(ng::Device::cpu());
  check_same_parameters(replica, reference, 1e-5);
}
