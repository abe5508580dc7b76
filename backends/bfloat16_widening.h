#pragma once
// bfloat16 through float32 kernels: the CPU backend's one route for it. On the CPU bfloat16
// serves storage, memory and parity with the GPU rather than speed (its arithmetic is float32's
// on widened values however a kernel is written), so each CPU method that takes bfloat16 runs
// its float32 kernel on float32 working copies of its bfloat16 operands. Inputs are widened
// before the kernel runs (exactly: a bfloat16 is the top half of a float32), outputs rounded
// back once after it (to nearest, ties to even); float32, float64 and int64 operands pass
// through untouched. The result is exactly the float32 kernel's on the bfloat16 values, rounded
// once, at the price of the copies' memory traffic. The CPU methods that only move values
// (copies, where, gathering and selection) move bfloat16 as it is, bits and all, and its
// random draws round float32 draws; CUDA's kernels take bfloat16 natively (compute_type.h).
//
// A method names each operand's role once, where it hands over:
//
//   if (any_bfloat16({&out, &in})) {
//     Float32Copies f(*this);
//     max_pool2d(f.output(out), indices, f.input(in), window);  // the float32 kernel
//     return f.finish();                                        // rounds `out` back
//   }
//
// A copy keeps its operand's shape. Broadcast dims (stride 0) stay broadcast in the copy, which
// holds each distinct value once; every other dim is laid out contiguously, in the operand's
// logical order. So the float32 kernel sees the same broadcasting as the original, in
// contiguous rows; where it would sum a strided float32 operand in another order than a
// contiguous one, the bfloat16 result is the contiguous one's, rounded.

#include <cstddef>
#include <deque>
#include <initializer_list>

#include "backends/backend.h"

namespace normgrad::backend {

// Whether any of the given operands (null ones skipped) holds bfloat16.
bool any_bfloat16(std::initializer_list<const TensorRef*> operands);

class Float32Copies {
 public:
  explicit Float32Copies(Backend& backend) : backend_(backend) {}
  Float32Copies(const Float32Copies&) = delete;
  Float32Copies& operator=(const Float32Copies&) = delete;
  ~Float32Copies();  // frees the copies; finish() must have run for outputs to be written

  // The operand as the float32 kernel should see it: a float32 copy of a bfloat16 operand,
  // valid while this object lives, or else the operand itself (the caller's reference). The
  // pointer forms pass null through.
  const TensorRef& input(const TensorRef& operand);   // read by the kernel
  const TensorRef& output(const TensorRef& operand);  // written by it
  const TensorRef& update(const TensorRef& operand);  // read and written (accumulation)
  const TensorRef* input(const TensorRef* operand);
  const TensorRef* output(const TensorRef* operand);
  // The recurrent steps' norms: their gains and biases read, their gradients written.
  GruStateNorms input(GruStateNorms norms);
  LstmStepNorms input(LstmStepNorms norms);
  GruStateNormGrads output(const GruStateNormGrads& grads);
  LstmStepNormGrads output(const LstmStepNormGrads& grads);

  // Rounds every output and update back into its bfloat16 operand.
  void finish();

 private:
  struct Copy {
    TensorRef original;
    TensorRef working;  // float32, broadcast dims kept
    std::size_t bytes = 0;
    bool written = false;
  };
  const TensorRef& add(const TensorRef& operand, bool read, bool written);

  Backend& backend_;
  std::deque<Copy> copies_;  // a deque: the references handed out stay valid as it grows
};

}  // namespace normgrad::backend
