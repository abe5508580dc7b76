#pragma once
// How much of the machine other processes took while a run trained. Times per step mean
// little on a shared machine unless one knows that: on 2 cores, a compiler running beside
// the program can double them. Linux only (/proc/stat); elsewhere the share is unknown.

#include <optional>

namespace mnist_mlp {

class OtherProcessesMeter {
 public:
  OtherProcessesMeter();  // starts measuring

  // The CPU time that other processes used since construction, as a fraction of all the
  // cores' time over that interval (0: the machine was ours; 0.5 on 2 cores: one core's
  // worth went elsewhere). nullopt where /proc/stat cannot be read.
  std::optional<double> fraction() const;

 private:
  struct Sample {
    double busy_seconds = 0;  // all processes, all cores, from /proc/stat
    double own_seconds = 0;   // this process, user + system
    double wall_seconds = 0;
    bool valid = false;
  };
  static Sample sample();
  Sample start_;
};

}  // namespace mnist_mlp
