#pragma once
// `--profile FILE` of every training program: a few training steps after a warm-up, profiled
// (normgrad's profiler, profiler/profile.h): the trace written to FILE (Chrome's Trace Event
// Format, for Perfetto or chrome://tracing), the table to FILE with .csv for its extension, and
// the table printed, each kernel's rates held against this machine's ceilings
// (io/ceilings.h, measured on first use and kept).
//
//   examples::ProfileFlags profile;
//   examples::add_profile_flags(train_command, profile);
//   ...
//   examples::StepProfile step_profile(profile, model, "gru_nmt");
//   callbacks.train_step = step_profile.around(train_step);

#include <normgrad/normgrad.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

namespace examples {

struct ProfileFlags {
  std::string file{};       // empty: no profile
  std::int64_t warmup = 2;  // steps before the profile opens
  std::int64_t steps = 3;   // steps it holds
  std::size_t top = 25;     // rows of the printed table
};

// --profile FILE (its folder must exist and be writable, checked before any work),
// --profile-warmup, --profile-steps.
void add_profile_flags(CLI::App* command, ProfileFlags& flags);

class StepProfile {
 public:
  // Nothing happens when flags.file is empty. The model's modules name the spans; its
  // parameters' device is the one profiled.
  StepProfile(ProfileFlags flags, const normgrad::nn::Module& model, std::string program,
              std::FILE* table_out = stdout);

  // Counts a finished training step: the profile opens after the warm-up's last and closes
  // after its own last, when the files are written and the table printed.
  void step_finished();
  // `step` with step_finished() after it.
  std::function<double()> around(std::function<double()> step);
  bool done() const { return done_; }

 private:
  void finish();

  ProfileFlags flags_;
  std::unordered_map<const void*, std::string> names_;
  normgrad::Device device_ = normgrad::Device::cpu();
  std::string program_;
  std::FILE* table_out_;
  std::int64_t steps_ = 0;
  std::optional<normgrad::profiler::Profile> profile_;
  bool done_ = false;
};

}  // namespace examples
