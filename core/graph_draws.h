#pragma once
// Random draws inside a CUDA graph's capture (core/cuda.h). The factories ask here, before a
// draw on a CUDA device, whether a Graph is recording that device; if one is, the draw reads
// its seed and base offset from `counters` when it runs (Backend::random_with_counters), and
// the Graph sets them before each replay.

#include <cstdint>
#include <optional>

#include "core/generator.h"
#include "core/tensor.h"

namespace normgrad::cuda::detail {

struct CapturedDraw {
  Tensor counters;       // int64 [2] on the device: {seed, base offset}, set at each replay
  std::uint64_t offset;  // this draw's first counter past the base
};

// Reserves `count` counters of `generator` in the replays of the Graph capturing `device`;
// nullopt when no Graph is capturing it (the draw then reserves from the generator now).
std::optional<CapturedDraw> captured_draw(int device, Generator& generator, std::uint64_t count);

}  // namespace normgrad::cuda::detail
