#pragma once
// Where an `experiment` finds its data: a data set given with --data, or a local task of the
// same shape that the program builds from a parallel corpus given with --corpus. The task is
// built once, into the experiment's folder, and the runs of a second invocation reuse it.
//
//   const examples::ExperimentData data{"the cloze task", "a folder of questions", "train.en",
//                                       "questions/test"};
//   examples::add_experiment_data_flags(command, flags, data);
//   ...
//   const std::string folder = examples::experiment_data_folder(flags, out, data, build, program);

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

namespace examples {

struct ExperimentDataFlags {
  std::string data, corpus;
};

struct ExperimentData {
  std::string name;         // the local task, in messages ("the cloze task")
  std::string data_help;    // what --data takes ("a folder of questions")
  std::string corpus_help;  // the files of the corpus the task is built from ("train.en")
  std::string built_file;   // in the task's folder, the last file the build writes
};

// Builds the local task from a corpus folder into a task folder.
using BuildLocalTask = std::function<void(const std::string& corpus, const std::string& folder)>;

// --data and --corpus.
inline void add_experiment_data_flags(CLI::App* command, ExperimentDataFlags& flags,
                                      const ExperimentData& data) {
  command->add_option("--data", flags.data, data.data_help);
  command->add_option("--corpus", flags.corpus,
                      "or a parallel corpus (" + data.corpus_help + "): " + data.name +
                          " is built from it into OUT/data");
}

// The data's folder: --data's, or <out>/data, where `build` makes the local task from --corpus
// unless it is there. An Error unless exactly one of the two is given.
std::string experiment_data_folder(const ExperimentDataFlags& flags, const std::string& out,
                                   const ExperimentData& data, const BuildLocalTask& build,
                                   const std::string& program);

}  // namespace examples
