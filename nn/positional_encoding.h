#pragma once
// Sinusoidal positional encoding (Vaswani et al. 2017, section 3.5): position pos gets
//   PE[pos, 2i]     = sin(pos / 10000^(2i / d_model))
//   PE[pos, 2i + 1] = cos(pos / 10000^(2i / d_model))
// so that PE[pos + k] is a linear function of PE[pos] for every offset k. Nothing is learned.
//
//   nn::SinusoidalPositionalEncoding positions(512);
//   Tensor x = positions.forward(embed(tokens) * std::sqrt(512.0));   // [batch, len, 512]

#include <cstdint>

#include "nn/layer.h"

namespace normgrad::nn {

namespace functional {
// The table [length, d_model]; an odd d_model ends with a sine column. Starts at position
// `offset` (a decoder extending a prefix of that length).
Tensor sinusoidal_positional_encoding(std::int64_t length, std::int64_t d_model,
                                      DType dtype = DType::Float32, std::int64_t offset = 0);
}  // namespace functional

// Adds the table to x [batch, len, d_model] (or [len, d_model]). Holds no parameters and no
// buffers, so checkpoints do not carry the table; it is made once for max_length positions.
class SinusoidalPositionalEncoding : public Layer {
 public:
  explicit SinusoidalPositionalEncoding(std::int64_t d_model, std::int64_t max_length = 1024,
                                        DType dtype = DType::Float32);
  std::string type_name() const override { return "SinusoidalPositionalEncoding"; }
  Tensor forward(const Tensor& x) override;
  // The same with the positions starting at `offset`.
  Tensor forward(const Tensor& x, std::int64_t offset);

  const Tensor& table() const { return table_; }  // [max_length, d_model]

 private:
  Tensor table_;  // not a buffer (it is a formula); moves to the input's device at first use
};

}  // namespace normgrad::nn
