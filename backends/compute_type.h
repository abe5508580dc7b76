#pragma once
// The type a kernel computes in, for the type it stores: float32 for bfloat16, which is a
// storage type without arithmetic of its own, and the stored type itself for every other. A
// kernel templated on the stored type S widens each value it loads to compute_t<S>, works in
// it, and rounds its result back to S once when it stores:
//
//   const compute_t<S> x = static_cast<compute_t<S>>(in[i]);
//   out[i] = static_cast<S>(x * x);  // for bfloat16: the float32 product, rounded once
//
// So a kernel instantiated for bfloat16 gives exactly what its float32 instantiation gives on
// the rounded inputs, rounded once, without float32 copies of its operands in memory. The CUDA
// kernels are written this way, where moving half the bytes is what bfloat16 is for. On the
// CPU only the random draws are (each a float32 draw, rounded); every other CPU kernel takes
// bfloat16 through float32 working copies of its operands (bfloat16_widening.h).

#include "base/bfloat16.h"

namespace normgrad::backend {

template <typename S> struct ComputeType { using type = S; };
template <> struct ComputeType<bfloat16> { using type = float; };

template <typename S> using compute_t = typename ComputeType<S>::type;

}  // namespace normgrad::backend
