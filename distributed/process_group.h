#pragma once
// A process group: the processes of one training job, as `mpirun -np N program ...` starts
// them, each with its rank (0 to N-1), and the collective operations between them. Every rank
// calls the same operations in the same order with tensors of the same shape and dtype; each
// call checks that (one small extra exchange) and throws normgrad::Error on every rank, naming
// the call, the rank and the shapes, instead of hanging or mixing up data.
//
//   auto& group = normgrad::distributed::ProcessGroup::world();
//   normgrad::Tensor grad = ...;                      // a contiguous CPU tensor on every rank
//   group.all_reduce(grad, normgrad::distributed::ReduceOp::Mean);   // now equal everywhere
//
// CPU tensors travel through MPI (the library mpirun belongs to), CUDA tensors through NCCL
// (one GPU per rank; NCCL's unique id goes over MPI). A build without MPI has the
// same functions; there is_available() is false and world() throws an Error saying how to get
// it. A process started without mpirun is a group of one.

#include <chrono>
#include <memory>
#include <string>

#include "core/tensor.h"

namespace normgrad::distributed {

// Whether this build of normgrad has the distributed component (MPI was found at configure
// time).
bool is_available();

// Whether the collectives take tensors on `device` where they are: CPU tensors with MPI, CUDA
// tensors with NCCL (built when the CUDA backend and NCCL were found). False for everything in
// a build without the distributed component.
bool collectives_on(Device device);

enum class ReduceOp { Sum, Mean };

// A collective started with ProcessGroup::all_reduce_async and not yet waited for. The
// collective advances while the program computes, as long as it asks done() now and then (MPI
// advances it inside its calls); wait() returns when it is complete. Not copyable: one owner
// waits.
class Work {
 public:
  Work();
  Work(Work&&) noexcept;
  Work& operator=(Work&&) noexcept;
  ~Work();  // waits for a collective still in flight (MPI still writes into its tensor)

  // Whether the collective has completed (for a Mean, the tensor is then scaled). Never
  // blocks.
  bool done();
  // Returns once the collective has completed; an Error if it has not after the group's
  // timeout (a rank has stopped, or calls other collectives).
  void wait();

 private:
  friend struct WorkMaker;  // where the backend builds one
  struct State;
  explicit Work(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

class ProcessGroup {
 public:
  // Every process of the job. MPI is initialised at the first call and finalised when the
  // program exits. An Error in a build without the distributed component.
  static ProcessGroup& world();

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Sums (or averages) `tensor` over the ranks, in place: afterwards every rank holds the
  // result. A contiguous tensor of float32, float64 or int64 (Mean: floating only), on the
  // CPU, or on a CUDA device where collectives_on says so (then queued on the device's stream:
  // it has finished for the GPU's later work, and for the host once the call returns).
  void all_reduce(const Tensor& tensor, ReduceOp op = ReduceOp::Sum) const;

  // all_reduce, started and returned at once: the caller computes and then waits on the Work.
  // `tensor` must stay alive and untouched until then. Unlike the other calls it does not
  // first check that the ranks agree (that check would wait for every rank): the caller must
  // know they do, as DataParallel does after comparing the ranks' models once.
  Work all_reduce_async(const Tensor& tensor, ReduceOp op = ReduceOp::Sum) const;

  // Copies rank `root`'s `tensor` into every other rank's, in place.
  void broadcast(const Tensor& tensor, int root = 0) const;

  // Every rank's `tensor`, stacked in rank order along a new first dimension: [size, ...].
  Tensor all_gather(const Tensor& tensor) const;

  // Returns when every rank has called it.
  void barrier() const;

  // How long a collective may wait for the other ranks before it throws an Error: 10 minutes
  // unless the environment's NORMGRAD_DISTRIBUTED_TIMEOUT gives seconds. A rank that stops
  // (an error, a crash, a different sequence of calls) otherwise leaves the others waiting
  // forever. After a timeout the group refuses further calls, and the process ends without
  // MPI's finalisation (which would wait for the stopped rank): mpirun then ends the others.
  std::chrono::milliseconds timeout() const { return timeout_; }
  void set_timeout(std::chrono::milliseconds timeout);

  // Ends the job on every rank with `code` (mpirun reports it), for a rank that cannot go on
  // while others wait in a collective. Does not return.
  [[noreturn]] void abort(int code) const;

 private:
  ProcessGroup(int rank, int size);
  // Throws on every rank unless all agree on `tensor`'s dtype and shape (and on `root`).
  void check_agreement(const char* call, const Tensor& tensor, int root = 0) const;

  int rank_ = 0, size_ = 1;
  std::chrono::milliseconds timeout_;
};

}  // namespace normgrad::distributed
