// CPU-versus-CUDA parity of attention, values and gradients: masked softmax and scaled
// dot-product attention with padding and causal masks, MultiHeadAttention (self- and
// cross-attention, masks, all keys of a query blocked), additive attention with a norm, and
// a Transformer encoder layer for each norm, post- and pre-norm, in evaluation and in training
// with dropout (whose masks are the CPU's, bit for bit, for the same generator state).
//
// Tolerances: a chain of matrix products over d_model terms, a softmax and a norm: the norm
// bounds (testing::norm_values, norm_gradients) with room for the products, 5e-5 and 5e-4 in
// float32.

#include <cstdint>
#include <string>
#include <vector>

#include "cuda_parity.h"
#include "module_gradcheck.h"

using namespace normgrad;
using testing::Inputs;
using testing::module_parity_mismatch;
using testing::normal;
using testing::on_device_of;
using testing::parity_mismatch;
using testing::Tolerance;

namespace {

Tolerance attention_values(DType dtype) {
  return dtype == DType::Float64 ? Tolerance{1e-11, 1e-11} : Tolerance{5e-5, 5e-5};
}
Tolerance attention_gradients(DType dtype) {
  return dtype == DType::Float64 ? Tolerance{1e-10, 1e-10} : Tolerance{5e-4, 5e-4};
}

// [batch 2, key_len 5]: the second sequence has two padded keys.
Tensor key_padding() { return testing::int_mask({{0, 0, 0, 0, 0}, {0, 0, 0, 1, 1}}); }

}  // namespace

TEST_CASE("cuda parity: masked_softmax and scaled_dot_product_attention with masks") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    INFO(dtype);
    // A query row with every key blocked gets zero weights on both devices.
    const Tensor blocked = testing::int_mask({{0, 1, 0, 1}, {1, 1, 1, 1}, {0, 0, 0, 0}});
    CHECK_NO_MISMATCH(parity_mismatch(
        [&](const Inputs& in) {
          return nn::functional::masked_softmax(in[0], on_device_of(blocked, in[0]));
        },
        {normal({2, 3, 4}, 1, dtype, 2.0)}, attention_values(dtype), attention_gradients(dtype)));
    const Tensor causal = nn::functional::causal_mask(5);
    CHECK_NO_MISMATCH(parity_mismatch(
        [&](const Inputs& in) {
          const nn::AttentionOutput out = nn::functional::scaled_dot_product_attention(
              in[0], in[1], in[2], on_device_of(causal, in[0]));
          return cat({out.output.flatten(), out.weights.flatten()});
        },
        {normal({2, 3, 5, 4}, 2, dtype), normal({2, 3, 5, 4}, 3, dtype),
         normal({2, 3, 5, 6}, 4, dtype)},
        attention_values(dtype), attention_gradients(dtype)));
  }
}

TEST_CASE("cuda parity: MultiHeadAttention, self and cross, with padding and causal masks") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    nn::MultiHeadAttention attention(8, 2, {.dtype = dtype});
    testing::randomise(attention, 5);
    const Tensor query = normal({2, 5, 8}, 6, dtype), memory = normal({2, 5, 8}, 7, dtype);
    const Tensor padding = key_padding();
    for (const bool causal : {false, true}) {
      for (const bool cross : {false, true}) {
        INFO(dtype << ", causal " << causal << ", cross " << cross);
        CHECK_NO_MISMATCH(module_parity_mismatch(
            attention,
            [&](const Inputs& in) {
              const Tensor& key = cross ? in[1] : in[0];
              const nn::AttentionOutput out = attention.forward(
                  in[0], key, key,
                  {.key_padding_mask = on_device_of(padding, in[0]), .causal = causal});
              return cat({out.output.flatten(), out.weights.flatten()});
            },
            {query, memory}, attention_values(dtype), attention_gradients(dtype)));
      }
    }
    // Every key of the second sequence blocked: its queries read zeros on both devices.
    INFO(dtype << ", all keys blocked");
    const Tensor all_blocked = testing::int_mask({{0, 0, 0, 0, 0}, {1, 1, 1, 1, 1}});
    CHECK_NO_MISMATCH(module_parity_mismatch(
        attention,
        [&](const Inputs& in) {
          return attention
              .forward(in[0], in[0], in[0], {.key_padding_mask = on_device_of(all_blocked, in[0])})
              .output;
        },
        {query}, attention_values(dtype), attention_gradients(dtype)));
  }
}

TEST_CASE("cuda parity: additive attention with an RMSNorm and padding") {
  SKIP_PARITY_WITHOUT_CUDA();
  nn::AdditiveAttention attention(6, 5, 7, {.norm = "rmsnorm"});
  testing::randomise(attention, 8);
  const Tensor padding = key_padding();
  CHECK_NO_MISMATCH(module_parity_mismatch(
      attention,
      [&](const Inputs& in) {
        const nn::AttentionOutput out =
            attention.forward(in[0], in[1], on_device_of(padding, in[0]));
        return cat({out.output.flatten(), out.weights.flatten()});
      },
      {normal({2, 5, 6}, 9), normal({2, 3, 5}, 10)}, attention_values(DType::Float32),
      attention_gradients(DType::Float32)));
}

TEST_CASE("cuda parity: a Transformer encoder layer for each norm, post- and pre-norm") {
  SKIP_PARITY_WITHOUT_CUDA();
  const Tensor padding = key_padding();
  for (const char* norm : {"layernorm", "rmsnorm", "prmsnorm:0.25", "l2norm"}) {
    for (const nn::NormPlacement placement : {nn::NormPlacement::Post, nn::NormPlacement::Pre}) {
      INFO(norm << (placement == nn::NormPlacement::Pre ? ", pre-norm" : ", post-norm"));
      nn::TransformerEncoderLayer layer(
          16, 4, 32,
          {.norm = norm, .placement = placement, .activation = nn::FeedForwardActivation::GELU});
      testing::randomise(layer, 11);
      layer.eval();  // no dropout
      CHECK_NO_MISMATCH(module_parity_mismatch(
          layer,
          [&](const Inputs& in) { return layer.forward(in[0], on_device_of(padding, in[0])); },
          {normal({2, 5, 16}, 12)}, attention_values(DType::Float32),
          attention_gradients(DType::Float32)));
    }
  }
}

TEST_CASE("cuda parity: a Transformer encoder layer in training, with the same dropout masks") {
  SKIP_PARITY_WITHOUT_CUDA();
  Generator generator(13);
  nn::TransformerEncoderLayer layer(16, 4, 32,
                                    {.norm = "rmsnorm", .dropout = 0.2, .generator = &generator});
  testing::randomise(layer, 14);
  layer.train();
  // Each run restarts the generator, so both devices draw the same masks.
  CHECK_NO_MISMATCH(module_parity_mismatch(
      layer,
      [&](const Inputs& in) {
        generator.manual_seed(15);
        return layer.forward(in[0]);
      },
      {normal({3, 6, 16}, 16)}, attention_values(DType::Float32),
      attention_gradients(DType::Float32)));
}
