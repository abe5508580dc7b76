#include "common/distributed_run.h"

#include <algorithm>
#include <cstdlib>
#include <initializer_list>
#include <thread>

#include "distributed/process_group.h"

namespace examples {

namespace ng = normgrad;

namespace {

bool several_ranks = false;  // set once this process has joined a job of several

// The first of the launcher's variables that holds a number at least `least` (Open MPI's,
// then MPICH Hydra's), or `fallback`.
int launcher_number(std::initializer_list<const char*> names, int least, int fallback) {
  for (const char* name : names)
    if (const char* value = std::getenv(name); value != nullptr && *value != '\0') {
      const int number = std::atoi(value);
      if (number >= least) return number;
    }
  return fallback;
}

// The ranks on this machine, and this one's index among them.
int ranks_on_this_machine() {
  return launcher_number({"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}, 1, 1);
}
int local_rank() {
  return launcher_number({"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"}, 0, 0);
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
  return {.rank = group.rank(), .size = group.size(), .local_rank = local_rank()};
}

ng::Device device_for_rank(ng::Device device, const DistributedRun& job) {
  if (!job.several() || device.is_cpu() || device.index != 0 || !ng::cuda::is_available())
    return device;
  return ng::Device::cuda(job.local_rank % ng::cuda::device_count());
}

int end_job(int code) {
  if (several_ranks) ng::distributed::ProcessGroup::world().abort(code);
  return code;
}

}  // namespace examples
