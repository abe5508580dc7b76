#include "common/distributed_run.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "distributed/process_group.h"

namespace examples {

namespace ng = normgrad;

namespace {

bool several_ranks = false;  // set once this process has joined a job of several

// The ranks on this machine, as the MPI launcher says (Open MPI, then MPICH's Hydra): 1 when
// it does not.
int ranks_on_this_machine() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"})
    if (const char* value = std::getenv(name); value != nullptr && std::atoi(value) > 0)
      return std::atoi(value);
  return 1;
}

}  // namespace

DistributedRun join_job(bool distributed, int threads, const std::string& program) {
  if (!distributed) return {};
  NG_CHECK(ng::distributed::is_available(), program,
           "--distributed: this build of normgrad has no distributed component (install MPI, "
           "e.g. Debian's libopenmpi-dev and openmpi-bin, and build again)");
  const auto& group = ng::distributed::ProcessGroup::world();
  several_ranks = group.size() > 1;
  if (threads == 0 && std::getenv("OMP_NUM_THREADS") == nullptr) {
    const int cores = static_cast<int>(std::thread::hardware_concurrency());
    ng::set_num_threads(std::max(1, cores / ranks_on_this_machine()));
  }
  return {.rank = group.rank(), .size = group.size()};
}

int end_job(int code) {
  if (several_ranks) ng::distributed::ProcessGroup::world().abort(code);
  return code;
}

}  // namespace examples
