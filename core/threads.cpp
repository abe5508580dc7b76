#include "core/threads.h"

#include <omp.h>

#include "backends/dispatch.h"
#include "base/error.h"

namespace normgrad {

void set_num_threads(int threads) {
  NG_CHECK(threads >= 1, "set_num_threads", "needs at least 1 thread, got ", threads);
  omp_set_num_threads(threads);
  backend::cpu_backend().set_num_threads(threads);
}

int get_num_threads() { return omp_get_max_threads(); }

}  // namespace normgrad
