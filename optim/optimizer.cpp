#include "optim/optimizer.h"

#include <utility>

#include "base/error.h"

namespace normgrad::optim {

Optimizer::Optimizer(std::vector<Tensor> parameters, const char* name)
    : parameters_(std::move(parameters)) {
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const Tensor& parameter = parameters_[i];
    NG_CHECK(parameter.defined() && parameter.is_leaf() && parameter.requires_grad(), name,
             "parameter ", i, " must be a leaf tensor that requires grad");
    NG_CHECK(is_floating(parameter.dtype()), name, "parameter ", i, " must be floating-point, got ",
             parameter.dtype());
  }
}

void Optimizer::zero_grad() {
  for (Tensor& parameter : parameters_) parameter.zero_grad();
}

namespace detail {

void load_slots(const nn::StateDict& state, const std::vector<Tensor>& parameters,
                const std::vector<std::string>& prefixes, std::vector<std::vector<Tensor>*> slots,
                const char* name) {
  // Every entry is checked first: the slots change only when all of them fit.
  for (const auto& [key, tensor] : state) {
    bool known = false;
    for (std::size_t p = 0; p < prefixes.size() && !known; ++p) {
      const std::string& prefix = prefixes[p];
      if (key.rfind(prefix + ".", 0) != 0) continue;
      std::size_t index = 0;
      try {
        std::size_t used = 0;
        index = std::stoul(key.substr(prefix.size() + 1), &used);
        if (used != key.size() - prefix.size() - 1) continue;
      } catch (const std::exception&) {
        continue;
      }
      NG_CHECK(index < parameters.size(), name, "state entry \"", key, "\" names parameter ", index,
               ", but there are ", parameters.size());
      const Tensor& parameter = parameters[index];
      NG_CHECK(tensor.shape() == parameter.shape() && tensor.dtype() == parameter.dtype(), name,
               "state entry \"", key, "\" has shape ", tensor.shape(), " and dtype ",
               tensor.dtype(), "; parameter ", index, " has ", parameter.shape(), " and ",
               parameter.dtype());
      known = true;
    }
    NG_CHECK(known, name, "unexpected state entry \"", key, "\"");
  }
  for (std::size_t p = 0; p < prefixes.size(); ++p)
    for (std::size_t i = 0; i < parameters.size(); ++i) {
      const auto found = state.find(prefixes[p] + "." + std::to_string(i));
      (*slots[p])[i] = found == state.end() ? Tensor() : found->second.clone();
    }
}

}  // namespace detail

}  // namespace normgrad::optim
