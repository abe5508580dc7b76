#pragma once
// The recording twin of a backend, which the dispatch point hands out while a profile is open
// (profiler/profile.h): each kernel is passed on to the device's own backend, timed, and
// recorded with its operands' shapes, the bytes it reads and writes and the floating-point
// operations it does; each allocation and free records the device's live bytes.
//
// How the operations are counted, per kernel, is written beside each method in
// profiling_backend.cpp. Bytes count each distinct element an operand holds once (a broadcast
// operand's stride-0 dimensions do not multiply), as a kernel that streams its operands moves
// them.
//
// On a CUDA device the time recorded is the host's around the launch; timing the device's
// work with events is the CUDA backend's part still to come.

#include "backends/backend.h"

namespace normgrad::backend {

// The recording twin of `inner` (one for each backend, made once and kept).
Backend& profiling_backend(Backend& inner);

// The bytes that `view`'s distinct elements take: the element size times the product of its
// dimensions whose stride is not 0.
double distinct_bytes(const TensorRef& view);

}  // namespace normgrad::backend
