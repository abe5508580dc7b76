// conv2d and the pooling ops against golden values computed independently with PyTorch in
// float64 (fixtures/generate_conv.py writes fixtures/conv.json): outputs and the gradients of
// sum(y * dy), through the ops and, for conv2d, through the Conv2d module with the fixture's
// parameters loaded. Both sides compute in float64, so agreement is asked to about 1e-10.

#include <string>

#include "fixture_helpers.h"

using namespace normgrad;
using testing::json;

namespace {

const json& fixture() { return testing::fixture_file("conv.json"); }

Tensor tensor_of(const json& c, const char* key, const char* shape_key) {
  return from_vector(c[key].get<std::vector<double>>(), c[shape_key].get<Shape>());
}

void check_close(const Tensor& actual, const json& c, const char* key) {
  testing::check_fixture_close(actual, c, key);
}

Size2d size_of(const json& c, const char* key) {
  return {c[key][0].get<std::int64_t>(), c[key][1].get<std::int64_t>()};
}

}  // namespace

TEST_CASE("conv2d fixtures: values and gradients equal PyTorch's") {
  REQUIRE(fixture()["conv2d"].size() >= 5);
  for (const json& c : fixture()["conv2d"]) {
    INFO("case: " << c["name"].get<std::string>());
    const bool has_bias = c["has_bias"].get<bool>();
    const Tensor x = tensor_of(c, "x", "x_shape").requires_grad_();
    const Tensor weight = tensor_of(c, "weight", "weight_shape").requires_grad_();
    Tensor bias;
    if (has_bias) bias = from_vector(c["bias"].get<std::vector<double>>(), {weight.size(0)});
    if (has_bias) bias.requires_grad_();
    const Tensor y = conv2d(x, weight, bias, size_of(c, "stride"), size_of(c, "padding"),
                            size_of(c, "dilation"));
    CHECK(y.shape() == c["y_shape"].get<Shape>());
    y.backward(tensor_of(c, "dy", "y_shape"));
    check_close(y, c, "y");
    check_close(x.grad(), c, "dx");
    check_close(weight.grad(), c, "dweight");
    if (has_bias) check_close(bias.grad(), c, "dbias");
  }
}

TEST_CASE("Conv2d fixtures: the module with PyTorch's parameters loaded") {
  for (const json& c : fixture()["conv2d"]) {
    INFO("case: " << c["name"].get<std::string>());
    const Shape w_shape = c["weight_shape"].get<Shape>();
    const bool has_bias = c["has_bias"].get<bool>();
    nn::Conv2d conv(w_shape[1], w_shape[0], Size2d(w_shape[2], w_shape[3]),
                    {.stride = size_of(c, "stride"),
                     .padding = size_of(c, "padding"),
                     .dilation = size_of(c, "dilation"),
                     .bias = has_bias,
                     .dtype = DType::Float64});
    nn::StateDict state{{"weight", tensor_of(c, "weight", "weight_shape")}};
    if (has_bias) state["bias"] = from_vector(c["bias"].get<std::vector<double>>(), {w_shape[0]});
    conv.load_state_dict(state);
    const Tensor y = conv.forward(tensor_of(c, "x", "x_shape"));
    y.backward(tensor_of(c, "dy", "y_shape"));
    check_close(y, c, "y");
    check_close(conv.weight.grad(), c, "dweight");
    if (has_bias) check_close(conv.bias.grad(), c, "dbias");
  }
}

TEST_CASE("pooling fixtures: values and gradients equal PyTorch's") {
  REQUIRE(fixture()["pool2d"].size() >= 7);
  for (const json& c : fixture()["pool2d"]) {
    INFO("case: " << c["name"].get<std::string>());
    const std::string kind = c["kind"].get<std::string>();
    const Tensor x = tensor_of(c, "x", "x_shape").requires_grad_();
    const Size2d kernel = size_of(c, "kernel");
    const Size2d stride = size_of(c, "stride");
    const Size2d padding = size_of(c, "padding");
    const Tensor y = kind == "max"   ? max_pool2d(x, kernel, stride, padding)
                     : kind == "avg" ? avg_pool2d(x, kernel, stride, padding)
                                     : global_avg_pool2d(x);
    CHECK(y.shape() == c["y_shape"].get<Shape>());
    y.backward(tensor_of(c, "dy", "y_shape"));
    check_close(y, c, "y");
    check_close(x.grad(), c, "dx");
  }
}
