#pragma once
// Data-parallel training: every rank holds the same model, computes the gradient of its own
// share of each batch, and the ranks average their gradients before the optimizer steps, so
// that every rank takes the same step, the one a single process would take on the whole batch
// (when each rank's loss is the mean over its equal share). As in PyTorch's
// DistributedDataParallel and Horovod:
//   - at construction, the ranks check that their models have the same parameters and buffers
//     (names, dtypes, shapes) and copy rank 0's values to all;
//   - the parameters are grouped into buckets of about 25 MB, in the reverse of their order in
//     the model (roughly the order in which backward finishes them); a bucket's average over
//     the ranks starts as soon as the last of its gradients is final, while backward computes
//     the rest, and backward() returns once every bucket has arrived;
//   - inside no_sync(), backward passes only accumulate gradients locally: the next pass outside
//     it averages the sums.
//
//   normgrad::distributed::DataParallel parallel(model);    // every rank, same model
//   for (const Batch& batch : my_share_of_the_batches) {
//     optimizer.zero_grad();
//     loss_of(model, batch).backward();                     // gradients averaged over ranks
//     optimizer.step();                                     // the same step on every rank
//   }
//
// A parameter that a pass gives no gradient on a rank (a branch this rank's batch did not
// take) counts as a zero there; one that no rank gave a gradient keeps none. Such a parameter
// holds its bucket (and those after it) back until backward ends, when every bucket is sent.
// Every rank must run backward the same number of times, with the same no_sync() scopes.
// Buffers (BatchNorm's running statistics) are not averaged: broadcast_buffers() copies rank
// 0's to every rank when wanted, e.g. before evaluating on every rank.
//
// Parameters on a CUDA device are exchanged on the GPU through NCCL when the build has it (one
// GPU per rank), else through host memory.

#include <cstdint>
#include <string>
#include <vector>

#include "distributed/process_group.h"
#include "nn/module.h"

namespace normgrad::distributed {

struct DataParallelOptions {
  std::int64_t bucket_bytes = std::int64_t{25} << 20;  // a bucket closes past this size
};

class DataParallel {
 public:
  // Checks that the ranks' models agree (an Error on every rank naming the first difference
  // otherwise), copies rank 0's parameters and buffers to every rank, and hooks into each
  // parameter's gradient. `module` must outlive this object. With one rank nothing is hooked
  // and backward runs as without DataParallel.
  explicit DataParallel(nn::Module& module, DataParallelOptions options = {});
  ~DataParallel();  // removes its hooks
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  nn::Module& module() const { return module_; }
  const ProcessGroup& group() const { return group_; }

  // Backward passes inside the returned guard's life accumulate gradients without exchanging
  // them (gradient accumulation over several batches per step).
  class NoSync {
   public:
    explicit NoSync(DataParallel& parallel) : parallel_(&parallel) { ++parallel.no_sync_depth_; }
    ~NoSync() {
      if (parallel_ != nullptr) --parallel_->no_sync_depth_;
    }
    NoSync(NoSync&& other) noexcept : parallel_(other.parallel_) { other.parallel_ = nullptr; }
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;
    NoSync& operator=(NoSync&&) = delete;

   private:
    DataParallel* parallel_;
  };
  [[nodiscard]] NoSync no_sync() { return NoSync(*this); }

  // Copies rank 0's parameters and buffers to every rank (done at construction; again after
  // rank 0 alone has loaded a checkpoint, say).
  void broadcast_state();
  // Copies rank 0's buffers to every rank.
  void broadcast_buffers();

  // The parameters' names, bucket by bucket in the order the buckets are sent.
  std::vector<std::vector<std::string>> bucket_names() const;

  // How the last backward pass's exchange went: the buckets sent while backward still ran
  // (the rest went when it ended), and the seconds backward then waited for them all, the
  // communication it did not hide.
  struct PassStats {
    std::size_t buckets_sent_early = 0;
    double seconds_waited = 0;
  };
  const PassStats& last_pass() const { return last_pass_; }

 private:
  struct Bucket {
    std::vector<std::size_t> parameters;  // indices into parameters_
    std::vector<std::int64_t> offsets;    // where each one's gradient lies in `flat`
    Tensor flat;                          // the gradients, then one flag per parameter
    std::size_t ready = 0;                // parameters whose gradient is final in this pass
    Work work;
  };

  void check_models_agree() const;
  void make_buckets(std::int64_t bucket_bytes);
  void on_gradient(std::size_t parameter);
  void send_ready_buckets();
  void send(Bucket& bucket);
  void finish_pass();

  nn::Module& module_;
  const ProcessGroup& group_;
  nn::NamedTensors parameters_;
  std::vector<std::size_t> bucket_of_;  // per parameter
  std::vector<std::uint64_t> hooks_;    // per parameter, when hooked
  std::vector<Bucket> buckets_;
  std::size_t next_to_send_ = 0;  // buckets are sent in order, the same on every rank
  bool in_pass_ = false;
  int no_sync_depth_ = 0;
  PassStats last_pass_;
};

}  // namespace normgrad::distributed
