#pragma once
// The machine's ceilings, which a profile's rates are held against (profiler/summary.h): the
// bandwidth of a copy too large for the caches and the rate of a large float32 GEMM, measured
// on this machine, on a device and at a thread count, and kept in a file so that every profile
// on it is held against the same figures.
//
//   const normgrad::io::MachineCeilings machine = normgrad::io::machine_ceilings(Device::cpu());
//   summary_table(profile, {.ceilings = machine.ceilings});
//
// The file (ceilings_file()) has a line per machine key: the key, the copy's bytes per second,
// the GEMM's operations per second and the date, separated by tabs. Delete a line, or the file,
// to measure again.

#include <string>

#include "base/device.h"
#include "profiler/summary.h"

namespace normgrad::io {

// Measures them now: the best of several copies of 256 MiB into 256 MiB (bytes read and
// written, as the profiler counts them), and the best of several 2048 x 2048 x 2048 float32
// products, at the current thread count. Takes about a second on a CPU.
profiler::Ceilings measure_ceilings(Device device);

// $NORMGRAD_CEILINGS if set, else $XDG_CACHE_HOME/normgrad/ceilings.tsv, else
// $HOME/.cache/normgrad/ceilings.tsv.
std::string ceilings_file();

// The processor's model name, as /proc/cpuinfo gives it ("unknown processor" elsewhere).
std::string processor_model();

// What names a machine in the file: the device, the processor's model (the GPU's, for CUDA) and
// the thread count: "cpu | Intel(R) Xeon(R) Platinum 8488C | 2 threads".
std::string machine_key(Device device);

struct MachineCeilings {
  profiler::Ceilings ceilings{};
  std::string key{};      // machine_key(device)
  std::string file{};     // where they are kept
  bool measured = false;  // measured now (the file had none), or read from the file
};

// The file's ceilings for this machine, or measured now and added to it (atomically). A file
// that cannot be written is not an error: the figures measured are returned all the same.
MachineCeilings machine_ceilings(Device device, const std::string& file = ceilings_file());

}  // namespace normgrad::io
