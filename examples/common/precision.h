#pragma once
// The programs' --precision: "float32" (the default) or "bfloat16", mixed precision as
// fairseq's --bf16 and Marian's --precision: activations stored in bfloat16 and computed in
// float32, while the parameters, their gradients and the optimiser's moments stay float32
// (normgrad/autograd/mixed_precision.h). A model folder's config.json keeps the name, so translate
// and score run in the precision the model was trained in.
//
//   const ng::DType activations =
//       examples::activation_dtype(config.precision, config.dtype, "gru_nmt");

#include <normgrad/normgrad.h>

#include <string>
#include <vector>

namespace examples {

// The names --precision accepts, the default first.
const std::vector<std::string>& precision_names();

// BFloat16 for "bfloat16"; for "float32", `parameters` (the model's own dtype: float64 in
// gradient checks). A normgrad::Error naming `program` for another name, or for bfloat16 with
// parameters other than float32 (bfloat16 activations meet float32 parameters only).
normgrad::DType activation_dtype(const std::string& precision, normgrad::DType parameters,
                                 const std::string& program);

}  // namespace examples
