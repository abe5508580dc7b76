#include "nn/sequential.h"

#include <string>
#include <utility>

#include "base/error.h"
#include "profiler/recorder.h"

namespace normgrad::nn {

Sequential::Sequential(std::vector<std::shared_ptr<Layer>> layers) {
  for (auto& layer : layers) push_back(std::move(layer));
}

void Sequential::push_back(std::shared_ptr<Layer> layer) {
  NG_CHECK(layer != nullptr, "Sequential", "cannot add a null layer at position ", layers_.size());
  register_module(std::to_string(layers_.size()), layer);
  layers_.push_back(std::move(layer));
}

Layer& Sequential::operator[](std::size_t index) const {
  NG_CHECK(index < layers_.size(), "Sequential", "index ", index, " is out of range for ",
           layers_.size(), " layers");
  return *layers_[index];
}

Tensor Sequential::forward(const Tensor& x) {
  const profiler::ModuleSpan span(this, "Sequential");

  Tensor y = x;
  for (const auto& layer : layers_) y = layer->forward(y);
  return y;
}

}  // namespace normgrad::nn
