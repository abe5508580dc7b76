#include "common/experiment_data.h"

#include <normgrad/normgrad.h>

#include <cstdio>
#include <filesystem>

namespace examples {

std::string experiment_data_folder(const ExperimentDataFlags& flags, const std::string& out,
                                   const ExperimentData& data, const BuildLocalTask& build,
                                   const std::string& program) {
  NG_CHECK(flags.data.empty() != flags.corpus.empty(), program, "experiment needs --data (",
           data.data_help, ") or --corpus (a parallel corpus to build ", data.name,
           " from), one of them");
  if (flags.corpus.empty()) return flags.data;
  const std::string folder = out + "/data";
  if (!std::filesystem::exists(folder + "/" + data.built_file)) {
    std::fprintf(stderr, "%s: building %s from '%s' in '%s'\n", program.c_str(), data.name.c_str(),
                 flags.corpus.c_str(), folder.c_str());
    build(flags.corpus, folder);
  }
  return folder;
}

}  // namespace examples
