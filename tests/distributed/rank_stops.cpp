// A data-parallel training loop in which rank 1 stops at its third step, for the tests that
// the other ranks then end too instead of waiting forever (see CMakeLists.txt):
//   rank_stops error   rank 1 leaves main with an error, as a program whose input fails does
//   rank_stops kill    rank 1 is killed (SIGKILL), as by the out-of-memory killer
#include <normgrad/normgrad.h>

#include <csignal>
#include <cstring>
#include <iostream>

#include "distributed/data_parallel.h"

namespace ng = normgrad;

int main(int argc, char** argv) {
  if (argc != 2 || (std::strcmp(argv[1], "error") != 0 && std::strcmp(argv[1], "kill") != 0)) {
    std::cerr << "usage: rank_stops error|kill\n";
    return 2;
  }
  try {
    auto& group = ng::distributed::ProcessGroup::world();
    ng::nn::Linear model(16, 4);
    ng::distributed::DataParallel parallel(model);
    ng::optim::SGD sgd(model.parameters(), {.lr = 0.1});
    for (int step = 0; step < 20; ++step) {
      if (group.rank() == 1 && step == 2) {
        std::cerr << "rank 1 stops at step " << step << "\n";
        if (std::strcmp(argv[1], "kill") == 0) std::raise(SIGKILL);
        return 1;
      }
      model.zero_grad();
      model.forward(ng::ones({8, 16})).square().mean().backward();
      sgd.step();
    }
    std::cout << "rank " << group.rank() << " finished all steps\n";
  } catch (const ng::Error& error) {
    std::cerr << error.what() << "\n";
    return 1;
  }
  return 0;
}
