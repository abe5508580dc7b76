#include "common/norm_sweep.h"

#include <normgrad/normgrad.h>

#include <cstdio>
#include <filesystem>

namespace examples {

std::vector<SweepRun> plan_norm_sweep(const NormSweep& sweep) {
  NG_CHECK(!sweep.norms.empty(), sweep.program, "the experiment needs at least one norm");
  std::vector<SweepRun> runs;
  for (const std::string& norm : sweep.norms) {
    const std::string label = norm + sweep.variant;
    runs.push_back({.norm = norm,
                    .label = label,
                    .folder = (std::filesystem::path(sweep.out) / run_folder_name(label)).string(),
                    .index = runs.size(),
                    .count = sweep.norms.size()});
  }
  for (const SweepRun& run : runs) sweep.check(run);
  return runs;
}

void announce_run(const NormSweep& sweep, const SweepRun& run) {
  if (sweep.announce)
    sweep.announce(run);
  else
    std::printf("== %s\n", run.label.c_str());
}

void check_sweep_folder(const RunFolder& folder, const nlohmann::json& stored, nlohmann::json asked,
                        const std::vector<nlohmann::json::json_pointer>& found_by_run) {
  for (const auto& pointer : found_by_run) asked[pointer] = stored[pointer];
  NG_CHECK(stored == asked, folder.program(), "'", folder.path(),
           "' holds another run than this experiment's: remove it, or give another --out");
}

}  // namespace examples
