#pragma once
// What the translation programs' command lines share: the device flag and the sentences of
// standard input.

#include <normgrad/normgrad.h>

#include <ostream>
#include <string>
#include <vector>

#include "nmt/sentence_batches.h"

namespace nmt {

// "cpu", "cuda" or "cuda:N" (an Error when that CUDA device is not present, or for anything
// else): examples::parse_device.
normgrad::Device parse_device(const std::string& name, const std::string& program);

// Standard input's lines, each checked as UTF-8 and stripped of its line end.
std::vector<std::string> read_stdin_lines();

// translate's output: the best translation a line when n_best is 1, else Moses's n-best form,
// "sentence number ||| translation ||| score", a line per hypothesis.
void write_translations(std::ostream& out, const std::vector<std::vector<Translation>>& lists,
                        std::int64_t n_best);

// score's output: "log-probability<TAB>tokens" a line per pair.
void write_scores(std::ostream& out, const std::vector<PairScore>& scores);

}  // namespace nmt
