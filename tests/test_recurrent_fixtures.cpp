// GRU and LSTM layers against golden values computed independently with PyTorch in float64
// (fixtures/generate_recurrent.py writes fixtures/recurrent.json). Without norms both have
// PyTorch's equations and parameter layout, so identical weights must give identical outputs
// and gradients, padded batches (PyTorch's packed sequences) included.

#include <memory>
#include <string>

#include "fixture_helpers.h"

using namespace normgrad;
using testing::json;

namespace {

Tensor tensor_from(const json& values, const Shape& shape) {
  return from_vector(values.get<std::vector<double>>(), shape);
}

}  // namespace

TEST_CASE("GRU and LSTM match PyTorch with identical weights") {
  const json& fixture = testing::fixture_file("recurrent.json");
  for (const json& c : fixture["cases"]) {
    const std::string name = c["name"];
    INFO("case: " << name);
    const bool lstm = c["kind"] == "lstm";
    const bool bidirectional = c["bidirectional"];
    const std::int64_t steps = c["steps"], batch = c["batch"];
    const std::int64_t input_size = c["input_size"], hidden = c["hidden_size"];
    const std::int64_t directions = bidirectional ? 2 : 1;
    const nn::RecurrentOptions options{.cell = {.dtype = DType::Float64},
                                       .bidirectional = bidirectional};
    std::shared_ptr<nn::Recurrent> layer;
    if (lstm)
      layer = std::make_shared<nn::Lstm>(input_size, hidden, options);
    else
      layer = std::make_shared<nn::Gru>(input_size, hidden, options);
    nn::StateDict state;
    for (const auto& [parameter, entry] : c["parameters"].items()) {
      const Tensor current = layer->state_dict().at(parameter);
      state[parameter] = tensor_from(entry["values"], current.shape());
    }
    layer->load_state_dict(state);

    const Shape state_shape{directions, batch, hidden};
    const Tensor x = tensor_from(c["x"], {steps, batch, input_size}).requires_grad_();
    const Tensor h0 = tensor_from(c["h0"], state_shape).requires_grad_();
    const Tensor c0 = lstm ? tensor_from(c["c0"], state_shape).requires_grad_() : Tensor();
    const Tensor lengths = from_vector(c["lengths"].get<std::vector<std::int64_t>>(), {batch});
    const nn::RecurrentOutput out = layer->forward_lengths(x, lengths, h0, c0);
    Tensor loss = (out.output * tensor_from(c["dy"], out.output.shape())).sum() +
                  (out.hidden * tensor_from(c["dh"], state_shape)).sum();
    if (lstm) loss = loss + (out.cell * tensor_from(c["dc"], state_shape)).sum();
    loss.backward();

    testing::check_fixture_close(out.output, c, "output");
    testing::check_fixture_close(out.hidden, c, "h_n");
    testing::check_fixture_close(x.grad(), c, "dx");
    testing::check_fixture_close(h0.grad(), c, "dh0");
    if (lstm) {
      testing::check_fixture_close(out.cell, c, "c_n");
      testing::check_fixture_close(c0.grad(), c, "dc0");
    }
    const nn::NamedTensors parameters = layer->named_parameters();
    CHECK(parameters.size() == c["parameters"].size());
    for (const auto& entry : parameters) {
      const auto& [parameter, value] = entry;
      INFO("parameter: " << entry.first);  // a binding cannot be captured (clang 14)
      REQUIRE(c["parameters"].contains(parameter));
      testing::check_fixture_close(value.grad(), c["parameters"][parameter], "grad");
    }
  }
}
