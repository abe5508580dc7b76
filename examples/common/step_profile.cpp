#include "common/step_profile.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <utility>

#include "common/command_flags.h"
#include "common/number_checks.h"
#include "common/text_file.h"

namespace examples {

namespace ng = normgrad;
namespace fs = std::filesystem;

namespace {

// "" when `path` can be written as a file (a file can be made in its nearest existing folder),
// else why not.
std::string unwritable(const std::string& path) {
  if (path.empty()) return "an empty path";
  std::error_code ec;
  if (fs::is_directory(path, ec)) return "'" + path + "' is a folder";
  fs::path folder = fs::absolute(path, ec).parent_path();
  while (!folder.empty() && !fs::exists(folder, ec) && folder != folder.root_path())
    folder = folder.parent_path();
  if (!fs::is_directory(folder, ec)) return "'" + folder.string() + "' is not a folder";
  // A file made and removed there tells what permissions alone may not (a read-only mount).
  std::string probe = (folder / ".normgrad-profile-").string() + std::string(6, 'X');  // mkstemp's
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) return "cannot write in '" + folder.string() + "'";
  ::close(fd);
  ::unlink(probe.c_str());
  return "";
}

std::string table_file(const std::string& trace) {
  fs::path path(trace);
  return path.replace_extension(".csv").string();
}

}  // namespace

void add_profile_flags(CLI::App* command, ProfileFlags& flags) {
  command
      ->add_option("--profile", flags.file,
                   "profile a few training steps after a warm-up: a trace (Chrome's format, for "
                   "Perfetto) in this file, the table in the same name with .csv, printed too")
      ->check(CLI::Validator(
          [](std::string& path) {
            const std::string why = unwritable(path);
            return why.empty() ? std::string() : "cannot be written: " + why;
          },
          "FILE"));
  command->add_option("--profile-warmup", flags.warmup, "steps before the profile opens")
      ->check(kNonNegative)
      ->capture_default_str();
  add_positive(command, "--profile-steps", flags.steps, "steps the profile holds");
}

StepProfile::StepProfile(ProfileFlags flags, const ng::nn::Module& model, std::string program,
                         std::FILE* table_out)
    : flags_(std::move(flags)), program_(std::move(program)), table_out_(table_out) {
  done_ = flags_.file.empty();
  if (done_) return;
  names_ = ng::nn::module_names(model);
  const std::vector<ng::Tensor> parameters = model.parameters();
  if (!parameters.empty()) device_ = parameters.front().device();
  if (flags_.warmup == 0) profile_.emplace(names_);
}

void StepProfile::step_finished() {
  if (done_) return;
  ++steps_;
  if (steps_ == flags_.warmup) profile_.emplace(names_);
  if (steps_ == flags_.warmup + flags_.steps) finish();
}

std::function<double()> StepProfile::around(std::function<double()> step) {
  if (done_) return step;
  return [this, step = std::move(step)] {
    const double loss = step();
    step_finished();
    return loss;
  };
}

void StepProfile::finish() {
  if (device_.is_cuda()) ng::cuda::synchronize(device_.index);
  profile_->close();
  const ng::io::MachineCeilings machine = ng::io::machine_ceilings(device_);
  write_text_file(flags_.file, ng::profiler::trace_json(*profile_), program_);
  write_text_file(table_file(flags_.file),
                  ng::profiler::summary_csv(*profile_, {.ceilings = machine.ceilings}), program_);
  std::fprintf(
      table_out_, "\n%s: profile of steps %lld to %lld (%s)\n%s", program_.c_str(),
      static_cast<long long>(flags_.warmup + 1),
      static_cast<long long>(flags_.warmup + flags_.steps), machine.key.c_str(),
      ng::profiler::summary_table(*profile_, {.top = flags_.top, .ceilings = machine.ceilings})
          .c_str());
  const std::string kept =
      machine.measured ? ", ceilings measured now and kept in " + machine.file : "";
  std::fprintf(table_out_, "trace: %s, table: %s%s\n\n", flags_.file.c_str(),
               table_file(flags_.file).c_str(), kept.c_str());
  std::fflush(table_out_);
  profile_.reset();
  done_ = true;
}

}  // namespace examples
