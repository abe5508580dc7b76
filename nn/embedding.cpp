#include "nn/embedding.h"

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "base/error.h"
#include "nn/init.h"
#include "profiler/recorder.h"

namespace normgrad::nn {

Embedding::Embedding(std::int64_t num_embeddings, std::int64_t dim, EmbeddingOptions options)
    : padding_index_(options.padding_index) {
  NG_CHECK(num_embeddings > 0 && dim > 0, "Embedding",
           "num_embeddings and dim must be positive, got ", num_embeddings, " and ", dim);
  if (padding_index_ && *padding_index_ < 0) *padding_index_ += num_embeddings;
  NG_CHECK(!padding_index_ || (*padding_index_ >= 0 && *padding_index_ < num_embeddings),
           "Embedding", "padding_index ", options.padding_index.value_or(0),
           " is out of range for ", num_embeddings, " embeddings");
  Tensor table = init::normal_(zeros({num_embeddings, dim}, {.dtype = options.dtype}), 0.0, 1.0);
  if (padding_index_) table.narrow(0, *padding_index_, 1).zero_();
  weight = register_parameter("weight", table);
}

Tensor Embedding::forward(const Tensor& indices) {
  const profiler::ModuleSpan span(this, "Embedding");

  const Tensor rows = embedding(weight, indices);
  if (!padding_index_ || !weight.requires_grad()) return rows;
  // The padding row's value, but no gradient: where the index is the padding index, take the
  // row from a detached copy of the table.
  const Tensor is_padding = eq(indices, static_cast<double>(*padding_index_)).unsqueeze(-1);
  return where(is_padding.to(weight.dtype()), embedding(weight.detach(), indices), rows);
}

}  // namespace normgrad::nn
