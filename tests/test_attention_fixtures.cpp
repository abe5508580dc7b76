// MultiHeadAttention and the Transformer layers against golden values computed independently
// with PyTorch in float64 (fixtures/generate_attention.py writes fixtures/attention.json):
// torch.nn.MultiheadAttention, TransformerEncoderLayer and TransformerDecoderLayer with their
// weights loaded into ours by name, compared in outputs, attention weights and the gradients
// of sum(y * dy) with respect to inputs and parameters, to about 1e-10.

#include <string>

#include "fixture_helpers.h"

using namespace normgrad;
using testing::json;

namespace {

const json& fixture() { return testing::fixture_file("attention.json"); }

Tensor tensor_of(const json& c, const char* key, const char* shape_key) {
  return from_vector(c[key].get<std::vector<double>>(), c[shape_key].get<Shape>());
}

// A [batch, len] 0/1 mask as int64.
Tensor mask_of(const json& c, const char* key) {
  const auto rows = c[key].get<std::vector<std::vector<std::int64_t>>>();
  std::vector<std::int64_t> values;
  for (const auto& row : rows) values.insert(values.end(), row.begin(), row.end());
  return from_vector(values, {static_cast<std::int64_t>(rows.size()),
                              static_cast<std::int64_t>(rows.front().size())});
}

// Loads the case's parameters into `module` (every one of them, strictly by name).
void load_parameters(nn::Module& module, const json& c) {
  nn::StateDict state;
  for (const auto& [name, entry] : c["parameters"].items())
    state[name] =
        from_vector(entry["values"].get<std::vector<double>>(), entry["shape"].get<Shape>());
  module.load_state_dict(state);
}

// Every parameter's gradient against the case's "dparameters".
void check_parameter_gradients(const nn::Module& module, const json& c) {
  const auto parameters = module.named_parameters();
  CHECK(parameters.size() == c["dparameters"].size());
  for (const auto& entry : parameters) {
    const auto& [name, parameter] = entry;
    INFO("parameter: " << entry.first);  // a binding cannot be captured (clang 14)
    REQUIRE(c["dparameters"].contains(name));
    REQUIRE(parameter.grad().defined());
    CHECK(testing::all_close(parameter.grad(), c["dparameters"][name].get<std::vector<double>>(),
                             testing::fixture_rtol, testing::fixture_atol));
  }
}

nn::TransformerLayerOptions layer_options(const json& c) {
  return {
      .norm = nn::NormSpec::parse("layernorm"),
      .placement = c["norm_first"].get<bool>() ? nn::NormPlacement::Pre : nn::NormPlacement::Post,
      .activation = c["activation"].get<std::string>() == "gelu" ? nn::FeedForwardActivation::GELU
                                                                 : nn::FeedForwardActivation::ReLU,
      .dropout = 0.0,
      .dtype = DType::Float64};
}

}  // namespace

TEST_CASE("MultiHeadAttention fixtures: outputs, weights and gradients equal PyTorch's") {
  CHECK_FALSE(fixture()["torch_version"].get<std::string>().empty());
  REQUIRE(fixture()["mha"].size() >= 3);
  for (const json& c : fixture()["mha"]) {
    INFO("case: " << c["name"].get<std::string>());
    nn::MultiHeadAttention attention(c["d_model"].get<std::int64_t>(),
                                     c["heads"].get<std::int64_t>(),
                                     {.bias = c["bias"].get<bool>(), .dtype = DType::Float64});
    load_parameters(attention, c);
    const Tensor query = tensor_of(c, "query", "query_shape").requires_grad_();
    const Tensor key = tensor_of(c, "key", "key_shape").requires_grad_();
    const Tensor value = tensor_of(c, "value", "value_shape").requires_grad_();
    const nn::AttentionOutput result = attention.forward(
        query, key, value,
        {.key_padding_mask = mask_of(c, "key_padding_mask"), .causal = c["causal"].get<bool>()});
    result.output.backward(tensor_of(c, "dy", "query_shape"));
    testing::check_fixture_close(result.output, c, "y");
    testing::check_fixture_close(result.weights, c, "weights");
    testing::check_fixture_close(query.grad(), c, "dquery");
    testing::check_fixture_close(key.grad(), c, "dkey");
    testing::check_fixture_close(value.grad(), c, "dvalue");
    check_parameter_gradients(attention, c);
  }
}

TEST_CASE("TransformerEncoderLayer fixtures: post- and pre-norm equal PyTorch's") {
  REQUIRE(fixture()["encoder_layer"].size() >= 2);
  for (const json& c : fixture()["encoder_layer"]) {
    INFO("case: " << c["name"].get<std::string>());
    nn::TransformerEncoderLayer layer(c["d_model"].get<std::int64_t>(),
                                      c["heads"].get<std::int64_t>(),
                                      c["feed_forward_size"].get<std::int64_t>(), layer_options(c));
    load_parameters(layer, c);
    const Tensor x = tensor_of(c, "x", "x_shape").requires_grad_();
    const Tensor y = layer.forward(x, mask_of(c, "key_padding_mask"));
    y.backward(tensor_of(c, "dy", "x_shape"));
    testing::check_fixture_close(y, c, "y");
    testing::check_fixture_close(x.grad(), c, "dx");
    check_parameter_gradients(layer, c);
  }
}

TEST_CASE("TransformerDecoderLayer fixtures: causal self-attention and cross-attention") {
  REQUIRE(fixture()["decoder_layer"].size() >= 1);
  for (const json& c : fixture()["decoder_layer"]) {
    INFO("case: " << c["name"].get<std::string>());
    nn::TransformerDecoderLayer layer(c["d_model"].get<std::int64_t>(),
                                      c["heads"].get<std::int64_t>(),
                                      c["feed_forward_size"].get<std::int64_t>(), layer_options(c));
    load_parameters(layer, c);
    const Tensor target = tensor_of(c, "target", "target_shape").requires_grad_();
    const Tensor memory = tensor_of(c, "memory", "memory_shape").requires_grad_();
    const Tensor y = layer.forward(target, memory,
                                   {.target_padding_mask = mask_of(c, "target_padding_mask"),
                                    .memory_padding_mask = mask_of(c, "memory_padding_mask")});
    y.backward(tensor_of(c, "dy", "target_shape"));
    testing::check_fixture_close(y, c, "y");
    testing::check_fixture_close(target.grad(), c, "dtarget");
    testing::check_fixture_close(memory.grad(), c, "dmemory");
    check_parameter_gradients(layer, c);
  }
}
