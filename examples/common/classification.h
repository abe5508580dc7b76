#pragma once
// What the image classifiers (mnist_mlp, convpool_cnn_c) measure the same way: how many images
// of a dataset a model labels right, and a model's size (model_size.h).
//
//   const std::int64_t correct = examples::count_correct(model, test, device, 500);
//   const double accuracy = static_cast<double>(correct) / test.images.size(0);

#include <normgrad/normgrad.h>

#include <algorithm>
#include <cstdint>

#include "common/model_size.h"
#include "data/shards.h"

namespace examples {

// The images of `dataset` whose largest logit is their label's, in evaluation mode (BatchNorm
// with its running statistics) and without a graph; the model's mode is left as it was. The
// images go to `device` `batch` at a time. With a `shard` of several, this rank's share of the
// batches alone (batches index, index + count, ...): the caller sums the ranks' counts.
template <class Model>
std::int64_t count_correct(Model& model, const normgrad::data::ImageDataset& dataset,
                           normgrad::Device device, std::int64_t batch,
                           const normgrad::data::Shard& shard = {}) {
  namespace ng = normgrad;
  ng::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  const std::int64_t count = dataset.images.size(0);
  std::int64_t correct = 0;
  for (std::int64_t first = batch * shard.index; first < count; first += batch * shard.count) {
    const std::int64_t size = std::min(batch, count - first);
    const ng::Tensor logits = model.forward(dataset.images.narrow(0, first, size).to(device));
    const ng::Tensor labels = dataset.labels.narrow(0, first, size).to(device);
    correct += static_cast<std::int64_t>(
        ng::eq(ng::argmax(logits, 1), labels).to(ng::DType::Float64).sum().item());
  }
  model.train(was_training);
  return correct;
}

}  // namespace examples
