#include "autograd/hooks.h"

#include <algorithm>

#include "autograd/autograd_meta.h"
#include "base/error.h"

namespace normgrad::autograd {

std::uint64_t register_post_accumulate_grad_hook(const Tensor& leaf, PostAccumulateGradHook hook) {
  NG_CHECK(leaf.defined() && leaf.requires_grad() && !meta_of(leaf).grad_fn,
           "register_post_accumulate_grad_hook",
           "needs a leaf that requires grad (a parameter), got ",
           !leaf.defined()         ? "an undefined tensor"
           : !leaf.requires_grad() ? "a tensor that does not require grad"
                                   : "the result of an op");
  NG_CHECK(hook != nullptr, "register_post_accumulate_grad_hook", "the hook is empty");
  AutogradMeta& meta = meta_of(leaf);
  const std::uint64_t id = ++meta.last_hook_id;
  meta.post_accumulate_hooks.emplace_back(id, std::move(hook));
  return id;
}

void remove_post_accumulate_grad_hook(const Tensor& leaf, std::uint64_t id) {
  NG_CHECK(leaf.defined(), "remove_post_accumulate_grad_hook", "the tensor is undefined");
  auto& hooks = meta_of(leaf).post_accumulate_hooks;
  const auto found = std::find_if(hooks.begin(), hooks.end(),
                                  [&](const auto& entry) { return entry.first == id; });
  NG_CHECK(found != hooks.end(), "remove_post_accumulate_grad_hook", "the tensor has no hook ", id);
  hooks.erase(found);
}

}  // namespace normgrad::autograd
