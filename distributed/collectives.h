#pragma once
// Collectives on plain values, built on the process group's tensor collectives: what programs
// gather besides gradients (counts and sums of an evaluation shared among the ranks, text).
//
//   const auto [loss, tokens] = sum_over_ranks(group, {my_loss, my_tokens});
//   const std::vector<std::string> every_ranks = all_gather_text(group, my_translations);

#include <string>
#include <vector>

#include "distributed/process_group.h"

namespace normgrad::distributed {

// Each value summed over the ranks (in float64), on every rank.
std::vector<double> sum_over_ranks(const ProcessGroup& group, const std::vector<double>& values);

// Every rank's `text` (any bytes, any length), in rank order, on every rank.
std::vector<std::string> all_gather_text(const ProcessGroup& group, const std::string& text);

// Every rank's list of strings, in rank order: a list per rank.
std::vector<std::vector<std::string>> all_gather_strings(const ProcessGroup& group,
                                                         const std::vector<std::string>& strings);

}  // namespace normgrad::distributed
