// The distributed component within one process. Its collectives run on two ranks in
// tests/distributed (mpirun); here, what a build without MPI answers.
#include "distributed/process_group.h"
#include "helpers.h"

TEST_CASE("distributed: a build without MPI refuses the process group, saying how to get it") {
  if (normgrad::distributed::is_available()) {
    MESSAGE("this build has MPI: tests/distributed runs the process group on two ranks");
    return;
  }
  CHECK_ERROR(normgrad::distributed::ProcessGroup::world(), "no distributed component",
              "libopenmpi-dev", "-DNORMGRAD_DISTRIBUTED=ON");
}
