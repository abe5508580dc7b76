#pragma once
// Sequential: layers applied one after the other. The layers become children named "0",
// "1", ..., so their parameters are "0.weight", "1.bias" and so on, as in PyTorch.
//
//   auto model = std::make_shared<nn::Sequential>();
//   model->push_back(std::make_shared<nn::Linear>(784, 1000));
//   model->push_back(nn::make_norm("rmsnorm", 1000));
//   model->push_back(std::make_shared<nn::ReLU>());
//   Tensor y = model->forward(x);

#include <cstddef>
#include <memory>
#include <vector>

#include "nn/layer.h"

namespace normgrad::nn {

class Sequential : public Layer {
 public:
  Sequential() = default;
  explicit Sequential(std::vector<std::shared_ptr<Layer>> layers);

  std::string type_name() const override { return "Sequential"; }
  void push_back(std::shared_ptr<Layer> layer);
  std::size_t size() const { return layers_.size(); }
  Layer& operator[](std::size_t index) const;
  Tensor forward(const Tensor& x) override;

 private:
  std::vector<std::shared_ptr<Layer>> layers_;
};

}  // namespace normgrad::nn
