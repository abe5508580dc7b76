// The stand-in for the distributed component, compiled when normgrad is configured without
// MPI: nothing is available, and asking for the process group says how to get one.

#include <cstdlib>

#include "base/error.h"
#include "distributed/process_group.h"

namespace normgrad::distributed {

bool is_available() { return false; }
bool collectives_on(Device) { return false; }

ProcessGroup& ProcessGroup::world() {
  throw Error(
      "distributed: this build of normgrad has no distributed component (install MPI, e.g. "
      "Debian's libopenmpi-dev and openmpi-bin, and configure with -DNORMGRAD_DISTRIBUTED=ON)");
}

// Unreachable without a group; defined so that the classes link the same in every build.
struct Work::State {};
Work::Work() = default;
Work::Work(std::unique_ptr<State> state) : state_(std::move(state)) {}
Work::Work(Work&&) noexcept = default;
Work& Work::operator=(Work&&) noexcept = default;
Work::~Work() = default;
bool Work::done() { return true; }
void Work::wait() {}

ProcessGroup::ProcessGroup(int rank, int size) : rank_(rank), size_(size) {}
void ProcessGroup::set_timeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }
Work ProcessGroup::all_reduce_async(const Tensor&, ReduceOp) const { return world(), Work(); }
void ProcessGroup::all_reduce(const Tensor&, ReduceOp) const { world(); }
void ProcessGroup::broadcast(const Tensor&, int) const { world(); }
Tensor ProcessGroup::all_gather(const Tensor&) const { return world(), Tensor(); }
void ProcessGroup::barrier() const { world(); }
void ProcessGroup::abort(int code) const { std::_Exit(code); }
void ProcessGroup::check_agreement(const char*, const Tensor&, int) const { world(); }

}  // namespace normgrad::distributed
