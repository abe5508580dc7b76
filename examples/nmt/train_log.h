#pragma once
// A translation run's train.csv and the state of its training loop, shared by the translation
// examples:
//
//   step,wall_seconds,train_loss,train_token_loss,dev_token_loss,dev_bleu,tokens_per_second,
//   step_seconds,learning_rate
//
// one row per step; dev_token_loss and dev_bleu are empty where they were not measured. A run
// resumed from a training state first cuts the rows after that state's step.

#include <normgrad/normgrad.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "io/checkpoint.h"
#include "text/translation_batches.h"

namespace nmt {

// What a training loop keeps besides the model, the optimizer and the generator, saved with
// each training state as metadata.
struct LoopState {
  normgrad::text::BatchPosition position;
  double best_bleu = -1;
  std::int64_t evaluations_without_best = 0;
  double wall_seconds = 0;  // of all invocations so far

  normgrad::io::Metadata to_metadata(const std::string& tokenizer_fingerprint) const;
  // An Error naming `path` and `program` when the metadata holds no loop state.
  static LoopState from_metadata(const normgrad::io::Metadata& metadata, const std::string& path,
                                 const std::string& program);
};

struct LogRow {
  std::int64_t step = 0;
  double wall_seconds = 0;
  double train_loss = 0;
  double train_token_loss = 0;
  double dev_token_loss = -1;  // -1: not measured at this step
  double dev_bleu = -1;
  double tokens_per_second = 0;
  double step_seconds = 0;
  double learning_rate = -1;  // -1: not logged (older logs)
};

// Appends rows to a train.csv. start() writes a new log with its header, or, resuming after
// `resumed_step` > 0, keeps the rows up to that step.
class TrainLog {
 public:
  TrainLog(std::string path, std::string program);
  ~TrainLog();
  TrainLog(const TrainLog&) = delete;
  TrainLog& operator=(const TrainLog&) = delete;

  void start(std::int64_t resumed_step);
  void append(const LogRow& row);  // flushed at once

 private:
  std::string path_, program_;
  std::FILE* file_ = nullptr;
};

// Reads a train.csv; an Error naming the file and line if it is not one.
std::vector<LogRow> read_train_log(const std::string& path, const std::string& program);

// The value at fraction q of the values sorted, interpolated linearly; 0 for none.
double quantile(std::vector<double> values, double q);

}  // namespace nmt
