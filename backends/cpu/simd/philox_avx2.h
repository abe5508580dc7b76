#pragma once
// Philox 4x32-10 eight counters at a time, for float32 uniforms: the stream of
// backends/philox.h, bit for bit, at several times the speed of the scalar loop (dropout
// masks draw one uniform per activation). The scalar loop in random.cpp stays the reference
// and the path for CPUs without AVX2, other dtypes and strided outputs.

#include <cstdint>

namespace normgrad::backend::cpu {

// out[i] = the float32 uniform on [low, high) of counter first + i, for i in [0, count): the
// top 24 bits of the counter's first Philox word as u, then low + u (high - low) in double,
// rounded to float32 and nudged below high should rounding reach it, as random.cpp computes
// it one element at a time. Returns false, writing nothing, where the CPU has no AVX2.
bool uniform_floats_avx2(float* out, std::int64_t count, std::uint64_t seed, std::uint64_t first,
                         double low, double high);

}  // namespace normgrad::backend::cpu
