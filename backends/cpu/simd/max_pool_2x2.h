#pragma once
// The 2x2 max-pool with stride 2 and no padding, the pool of the paper's CIFAR model, one
// (sample, channel) plane at a time. Its windows tile the plane: output (oh, ow) reads the
// block of rows 2 oh, 2 oh + 1 and columns 2 ow, 2 ow + 1 (an odd last row or column is in
// no window). pool.cpp's general loop spends most of its time on window bounds and on
// branches that random data mispredicts; here a block is four loads and three
// compare-and-selects, four blocks at a time with SSE2 on x86-64 (what that gains: README.md).
//
// The results are the same bits as the general kernel's (backend.h gives the contract): the
// candidates are taken row by row, (0, 0), (0, 1), (1, 0), (1, 1); a later one wins only if
// it is greater, or if it is NaN and the best so far is not, so the first maximum wins ties
// and the first NaN wins and stays.

#include <cstdint>

#include "backends/backend.h"

namespace normgrad::backend::cpu {

struct PlaneSize {
  std::int64_t height, width, out_h, out_w;
};

bool is_max_pool_2x2(const Window2d& window);

// out and indices: [out_h, out_w]; indices hold h W + w within the plane.
void max_pool_2x2_plane(const PlaneSize& size, const float* in, float* out, std::int64_t* indices);
void max_pool_2x2_plane(const PlaneSize& size, const double* in, double* out,
                        std::int64_t* indices);

// dx [H, W] from dy and indices [out_h, out_w], when every index lies in its own output's
// block (always so after max_pool_2x2_plane): the blocks are disjoint, so dx is dy at each
// block's index and 0 everywhere else, written in one pass, without the general path's fill
// and scatter. Returns false, having written part of dx, at the first index outside its
// block (another pool that happens to have a 2x2 pool's shapes, or index -1); the caller
// then runs the general path, which overwrites the whole plane.
bool max_pool_2x2_backward_plane(const PlaneSize& size, float* dx, const float* dy,
                                 const std::int64_t* indices);
bool max_pool_2x2_backward_plane(const PlaneSize& size, double* dx, const double* dy,
                                 const std::int64_t* indices);

}  // namespace normgrad::backend::cpu
