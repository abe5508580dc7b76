// nn::Module (registration, names, modes, state dicts) and the initialisers.

#include "helpers.h"

using namespace normgrad;

namespace {

struct Affine : nn::Module {
  Tensor weight, bias, count;
  Affine(std::int64_t in, std::int64_t out) {
    weight = register_parameter("weight", randn({out, in}));
    bias = register_parameter("bias", zeros({out}));
    count = register_buffer("count", zeros({1}));
  }
  std::string type_name() const override { return "Affine"; }
};

struct TwoLayers : nn::Module {
  std::shared_ptr<Affine> first, second;
  TwoLayers() {
    first = register_module("first", std::make_shared<Affine>(3, 4));
    second = register_module("second", std::make_shared<Affine>(4, 2));
  }
};

std::vector<std::string> names(const nn::NamedTensors& entries) {
  std::vector<std::string> out;
  for (const auto& [name, tensor] : entries) out.push_back(name);
  return out;
}

}  // namespace

TEST_CASE("parameters, buffers and children carry dotted names in registration order") {
  TwoLayers model;
  CHECK(names(model.named_parameters()) ==
        std::vector<std::string>{"first.weight", "first.bias", "second.weight", "second.bias"});
  CHECK(names(model.named_buffers()) == std::vector<std::string>{"first.count", "second.count"});
  CHECK(model.parameters().size() == 4);
  CHECK(model.parameters(false).empty());
  CHECK(model.named_children().size() == 2);
  for (const Tensor& parameter : model.parameters()) {
    CHECK(parameter.requires_grad());
    CHECK(parameter.is_leaf());
  }
  CHECK_FALSE(model.first->count.requires_grad());
  // The member and the registered entry are the same tensor.
  CHECK(model.named_parameters()[0].second.is_same(model.first->weight));
}

TEST_CASE("train and eval reach every child, and zero_grad clears every parameter") {
  TwoLayers model;
  model.eval();
  CHECK_FALSE(model.is_training());
  CHECK_FALSE(model.second->is_training());
  model.train();
  CHECK(model.first->is_training());
  (model.first->weight.sum() + model.second->bias.sum()).backward();
  CHECK(model.first->weight.grad().defined());
  model.zero_grad();
  for (const Tensor& parameter : model.parameters()) CHECK_FALSE(parameter.grad().defined());
}

TEST_CASE("state_dict round trip copies values into the same tensors") {
  manual_seed(1);
  TwoLayers source;
  manual_seed(2);
  TwoLayers target;
  const Tensor handle = target.first->weight;
  CHECK(handle.to_vector<float>() != source.first->weight.to_vector<float>());
  target.load_state_dict(source.state_dict());
  CHECK(handle.to_vector<float>() == source.first->weight.to_vector<float>());
  CHECK(target.first->weight.is_same(handle));  // loaded in place
  CHECK(target.first->weight.requires_grad());
  CHECK(source.state_dict().size() == 6);
}

TEST_CASE("load_state_dict refuses missing, unexpected and mismatched entries, changing nothing") {
  TwoLayers model;
  const std::vector<float> before = model.first->weight.to_vector<float>();
  nn::StateDict state = model.state_dict();
  nn::StateDict missing = state;
  missing.erase("second.bias");
  CHECK_ERROR(model.load_state_dict(missing), "load_state_dict", "missing", "second.bias");
  nn::StateDict extra = state;
  extra["third.weight"] = zeros({1});
  CHECK_ERROR(model.load_state_dict(extra), "load_state_dict", "unexpected", "third.weight");
  nn::StateDict wrong_shape = state;
  wrong_shape["first.weight"] = zeros({4, 4});
  wrong_shape["second.weight"] = zeros({2, 4});
  CHECK_ERROR(model.load_state_dict(wrong_shape), "load_state_dict", "first.weight", "[4, 4]", "[4, 3]");
  nn::StateDict wrong_dtype = state;
  wrong_dtype["first.bias"] = zeros({4}, {.dtype = DType::Float64});
  CHECK_ERROR(model.load_state_dict(wrong_dtype), "load_state_dict", "first.bias", "float64");
  CHECK(model.first->weight.to_vector<float>() == before);
  missing["first.weight"] = zeros({4, 3});
  model.load_state_dict(missing, /*strict=*/false);
  CHECK(model.first->weight.sum().item() == 0);
}

TEST_CASE("registration errors") {
  struct Bad : nn::Module {
    void twice() {
      register_parameter("w", zeros({1}));
      register_parameter("w", zeros({1}));
    }
    void dotted() { register_buffer("a.b", zeros({1})); }
    void integer() { register_parameter("k", zeros({1}, {.dtype = DType::Int64})); }
  };
  Bad bad;
  CHECK_ERROR(bad.twice(), "register_parameter", "already", "\"w\"");
  CHECK_ERROR(bad.dotted(), "register_buffer", "'.'");
  CHECK_ERROR(bad.integer(), "register_parameter", "int64");
}

TEST_CASE("initialisers draw with the documented spread") {
  Generator generator(11);
  Tensor w = zeros({400, 300});
  nn::init::xavier_uniform_(w, 1.0, generator);
  const double bound = std::sqrt(6.0 / 700.0);
  CHECK(w.max().item() <= bound);
  CHECK(min(w).item() >= -bound);
  CHECK(w.var().item() == doctest::Approx(bound * bound / 3).epsilon(0.02));
  nn::init::kaiming_normal_(w, 0.0, nn::init::FanMode::FanIn, "relu", generator);
  CHECK(w.var().item() == doctest::Approx(2.0 / 300).epsilon(0.02));
  nn::init::xavier_normal_(w, 2.0, generator);
  CHECK(w.var().item() == doctest::Approx(4.0 * 2 / 700).epsilon(0.02));
  nn::init::kaiming_uniform_(w, 0.0, nn::init::FanMode::FanOut, "linear", generator);
  CHECK(w.var().item() == doctest::Approx(1.0 / 400).epsilon(0.02));
  nn::init::normal_(w, 3.0, 0.5, generator);
  CHECK(w.mean().item() == doctest::Approx(3.0).epsilon(0.01));
  nn::init::constant_(w, 0.25);
  CHECK(w.max().item() == 0.25f);
  CHECK(nn::init::compute_fans(zeros({8, 4, 3, 3})).fan_in == 36);
  CHECK(nn::init::compute_fans(zeros({8, 4, 3, 3})).fan_out == 72);
  CHECK(nn::init::gain_for("tanh") == doctest::Approx(5.0 / 3));
  // The same seed gives the same weights.
  Generator g1(5), g2(5);
  CHECK(nn::init::uniform_(zeros({10}), -1, 1, g1).to_vector<float>() ==
        nn::init::uniform_(zeros({10}), -1, 1, g2).to_vector<float>());
}

TEST_CASE("initialisers refuse what they cannot fill") {
  CHECK_ERROR(nn::init::xavier_uniform_(zeros({5})), "compute_fans", "[5]");
  CHECK_ERROR(nn::init::uniform_(zeros({2}, {.dtype = DType::Int64}), 0, 1), "uniform_", "int64");
  CHECK_ERROR(nn::init::uniform_(zeros({2}), 1, 0), "uniform_", "above");
  CHECK_ERROR(nn::init::normal_(zeros({2}), 0, -1), "normal_", "non-negative");
  CHECK_ERROR(nn::init::gain_for("swish"), "gain_for", "swish");
  CHECK_ERROR(nn::init::kaiming_normal_(zeros({3, 0})), "kaiming", "is 0");
}

TEST_CASE("orthogonal_ gives orthonormal rows or columns, scaled by the gain") {
  Generator generator(4);
  for (const Shape& shape : {Shape{5, 8}, Shape{8, 5}, Shape{6, 6}, Shape{4, 2, 3}}) {
    CAPTURE(to_string(shape));
    Tensor w = nn::init::orthogonal_(zeros(shape, {.dtype = DType::Float64}), 2.0, generator);
    const Tensor flat = w.reshape({shape[0], -1}) / 2.0;
    const bool wide = flat.size(0) <= flat.size(1);
    const Tensor gram = wide ? matmul(flat, flat.t()) : matmul(flat.t(), flat);
    const std::int64_t n = gram.size(0);
    const Tensor identity = from_vector(std::vector<double>(static_cast<std::size_t>(n * n), 0.0), {n, n});
    for (std::int64_t i = 0; i < n; ++i) identity.select(0, i).narrow(0, i, 1).fill_(1);
    CHECK(testing::all_close(gram, identity, 0, 1e-12));
  }
  Generator g1(9), g2(9);
  CHECK(nn::init::orthogonal_(zeros({3, 3}), 1.0, g1).to_vector<float>() ==
        nn::init::orthogonal_(zeros({3, 3}), 1.0, g2).to_vector<float>());
  CHECK_ERROR(nn::init::orthogonal_(zeros({4})), "orthogonal_", "[4]");
}
