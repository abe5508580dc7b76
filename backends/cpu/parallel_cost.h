#pragma once
// How much work a parallel region must carry to be worth starting, under this process's
// OpenMP wait policy.
//
// Starting a region costs what waking the team costs. Threads that spin between regions (the
// OpenMP default) answer within one or two microseconds, about the time one thread needs for
// 32768 simple elements. Threads that sleep (OMP_WAIT_POLICY=passive, the example programs'
// default, or GOMP_SPINCOUNT=0) take 60-75 us to wake on a 2-core virtual machine, where
// sharing a 5 us product between two threads made it take 79 us (bench/NOTES.md, "Where the
// steps' time goes, by the profiler"): at about 10 elements a nanosecond, 2^19 elements.
// Measuring the wake-up in the process itself proved unreliable: on a shared machine a
// measurement at start-up now and then took milliseconds and left a whole run single-threaded.

#include <algorithm>
#include <cstdint>

namespace normgrad::backend::cpu {

// Units of work (simple elements, as parallel_for counts them) below which a loop runs on the
// calling thread: 32768 with spinning threads, 2^19 with sleeping ones.
std::int64_t parallel_threshold();

// Whether this process's idle OpenMP threads sleep rather than spin.
bool threads_sleep_between_regions();

// A thread does about 5.5 multiply-adds of a product in the time of one simple element (55 a
// nanosecond in normgrad's AVX-512 GEMM, against 10 elements), and a product is shared only
// when it holds two regions' worth of work, the GEMMs' own loops taking their threads at once:
// a product gets one thread per this many multiply-adds, and never a second below 2^20.
inline constexpr std::int64_t macs_per_element = 11;
inline std::int64_t macs_per_thread() {
  return std::max<std::int64_t>(std::int64_t{1} << 20, macs_per_element * parallel_threshold());
}

}  // namespace normgrad::backend::cpu
