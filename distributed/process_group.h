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
// CPU tensors travel through MPI (the library mpirun belongs to). A build without MPI has the
// same functions; there is_available() is false and world() throws an Error saying how to get
// it. A process started without mpirun is a group of one.

#include <string>

#include "core/tensor.h"

namespace normgrad::distributed {

// Whether this build of normgrad has the distributed component (MPI was found at configure
// time).
bool is_available();

enum class ReduceOp { Sum, Mean };

class ProcessGroup {
 public:
  // Every process of the job. MPI is initialised at the first call and finalised when the
  // program exits. An Error in a build without the distributed component.
  static ProcessGroup& world();

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Sums (or averages) `tensor` over the ranks, in place: afterwards every rank holds the
  // result. A contiguous CPU tensor of float32, float64 or int64 (Mean: floating only).
  void all_reduce(const Tensor& tensor, ReduceOp op = ReduceOp::Sum) const;

  // Copies rank `root`'s `tensor` into every other rank's, in place.
  void broadcast(const Tensor& tensor, int root = 0) const;

  // Every rank's `tensor`, stacked in rank order along a new first dimension: [size, ...].
  Tensor all_gather(const Tensor& tensor) const;

  // Returns when every rank has called it.
  void barrier() const;

  // Ends the job on every rank with `code` (mpirun reports it), for a rank that cannot go on
  // while others wait in a collective. Does not return.
  [[noreturn]] void abort(int code) const;

 private:
  ProcessGroup(int rank, int size) : rank_(rank), size_(size) {}
  // Throws on every rank unless all agree on `tensor`'s dtype and shape (and on `root`).
  void check_agreement(const char* call, const Tensor& tensor, int root = 0) const;

  int rank_ = 0, size_ = 1;
};

}  // namespace normgrad::distributed
