// A run gives the same bits at any thread count: every CPU kernel splits its work in blocks
// whose boundaries depend on the shapes alone, and combines them in a fixed order (BLAS
// products included: OpenBLAS runs single-threaded inside normgrad's blocks). Small models
// trained for a few Adam steps at 1, 2 and 3 threads from one seed must end with identical
// parameters, compared byte for byte.

#include <cstring>
#include <functional>

#include "helpers.h"

using namespace normgrad;

namespace {

// Each parameter's bytes, in order.
std::vector<std::vector<char>> parameter_bytes(const nn::Module& model) {
  std::vector<std::vector<char>> all;
  for (const Tensor& parameter : model.parameters()) {
    const Tensor t = parameter.detach().contiguous();
    const std::size_t size = static_cast<std::size_t>(t.numel()) * element_size(t.dtype());
    const char* data = t.dtype() == DType::Float64 ? reinterpret_cast<const char*>(t.data_ptr<double>())
                                                   : reinterpret_cast<const char*>(t.data_ptr<float>());
    all.emplace_back(data, data + size);
  }
  return all;
}

struct Model {
  std::shared_ptr<nn::Module> module;
  std::function<Tensor(Generator&)> loss;  // one batch's loss, its data drawn from the generator
};

// Trains a fresh model for `steps` Adam steps with `threads` threads; returns its parameters.
std::vector<std::vector<char>> train(const std::function<Model()>& make, int threads, int steps) {
  const int previous = get_num_threads();
  set_num_threads(threads);
  REQUIRE(get_num_threads() == threads);  // nothing (OpenBLAS included) may reset it
  manual_seed(11);
  const Model model = make();
  optim::Adam adam(model.module->parameters(), {.lr = 1e-2});
  Generator data(5);
  for (int step = 0; step < steps; ++step) {
    adam.zero_grad();
    model.loss(data).backward();
    optim::clip_grad_norm(model.module->parameters(), 1.0);
    adam.step();
  }
  set_num_threads(previous);
  return parameter_bytes(*model.module);
}

void check_same_at_1_2_3_threads(const std::function<Model()>& make, int steps) {
  const auto one = train(make, 1, steps);
  CHECK(train(make, 2, steps) == one);
  CHECK(train(make, 3, steps) == one);
}

std::shared_ptr<nn::Sequential> mlp(const char* first_norm, const char* second_norm) {
  auto model = std::make_shared<nn::Sequential>();
  model->push_back(std::make_shared<nn::Linear>(784, 256));
  model->push_back(nn::make_norm(first_norm, 256));
  model->push_back(std::make_shared<nn::ReLU>());
  model->push_back(std::make_shared<nn::Linear>(256, 256));
  model->push_back(nn::make_norm(second_norm, 256));
  model->push_back(std::make_shared<nn::ReLU>());
  model->push_back(std::make_shared<nn::Linear>(256, 10));
  return model;
}

Model classifier(std::shared_ptr<nn::Sequential> model, Shape input, std::int64_t batch) {
  input.insert(input.begin(), batch);
  return {model, [model, input, batch](Generator& data) {
            const Tensor x = randn(input, data);
            const Tensor y = randint(0, 10, {batch}, data);
            return nn::cross_entropy(model->forward(x), y);
          }};
}

}  // namespace

TEST_CASE("an MLP trains to the same bits at 1, 2 and 3 threads, at batch 4 and 64") {
  for (const std::int64_t batch : {4, 64}) {
    CAPTURE(batch);
    check_same_at_1_2_3_threads([batch] { return classifier(mlp("rmsnorm", "layernorm"), {784}, batch); }, 3);
    check_same_at_1_2_3_threads([batch] { return classifier(mlp("prmsnorm", "batchnorm"), {784}, batch); }, 3);
  }
}

TEST_CASE("a small CNN trains to the same bits at 1, 2 and 3 threads") {
  check_same_at_1_2_3_threads(
      [] {
        auto model = std::make_shared<nn::Sequential>();
        model->push_back(std::make_shared<nn::Conv2d>(3, 16, 3, nn::Conv2dOptions{.padding = 1}));
        model->push_back(nn::make_norm("batchnorm", 16, nn::NormLayout::ChannelMaps));
        model->push_back(std::make_shared<nn::ReLU>());
        model->push_back(std::make_shared<nn::MaxPool2d>(2));
        model->push_back(std::make_shared<nn::Conv2d>(16, 10, 3, nn::Conv2dOptions{.padding = 1}));
        model->push_back(std::make_shared<nn::GlobalAvgPool2d>());
        return classifier(model, {3, 16, 16}, 16);
      },
      2);
}

TEST_CASE("a GRU language model trains to the same bits at 1, 2 and 3 threads") {
  check_same_at_1_2_3_threads(
      [] {
        struct Lm : nn::Module {
          std::shared_ptr<nn::Embedding> embed = std::make_shared<nn::Embedding>(500, 64);
          std::shared_ptr<nn::Gru> gru = std::make_shared<nn::Gru>(
              64, 128, nn::RecurrentOptions{.cell = {.norm = "rmsnorm"}});
          std::shared_ptr<nn::Linear> out = std::make_shared<nn::Linear>(128, 500);
          Lm() {
            register_module("embed", embed);
            register_module("gru", gru);
            register_module("out", out);
          }
          std::string type_name() const override { return "Lm"; }
        };
        auto lm = std::make_shared<Lm>();
        return Model{lm, [lm](Generator& data) {
                       const Tensor tokens = randint(0, 500, {12, 16}, data);  // [T, B]
                       const Tensor hidden = lm->gru->forward(lm->embed->forward(tokens)).output;
                       const Tensor logits = lm->out->forward(hidden.reshape({12 * 16, 128}));
                       return nn::cross_entropy(logits, randint(0, 500, {12 * 16}, data));
                     }};
      },
      2);
}

TEST_CASE("products that OpenBLAS computes are the same at 1, 2 and 3 threads") {
  // Few rows (a batch of 4), a long inner dimension with few outputs, and float64.
  Generator generator(3);
  const std::vector<std::pair<Tensor, Tensor>> products = {
      {randn({4, 784}, generator), randn({784, 1000}, generator)},
      {randn({16, 60000}, generator), randn({60000, 16}, generator)},
      {randn({300, 200}, generator, {.dtype = DType::Float64}),
       randn({200, 100}, generator, {.dtype = DType::Float64})}};
  const int previous = get_num_threads();
  for (const auto& [a, b] : products) {
    std::vector<std::vector<double>> results;
    for (const int threads : {1, 2, 3}) {
      set_num_threads(threads);
      REQUIRE(get_num_threads() == threads);
      results.push_back(matmul(a, b).to_vector<double>());
    }
    CHECK(results[1] == results[0]);
    CHECK(results[2] == results[0]);
  }
  set_num_threads(previous);
}
