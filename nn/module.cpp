#include "nn/module.h"

#include <algorithm>

#include "autograd/grad_mode.h"
#include "base/error.h"

namespace normgrad::nn {

void Module::check_new_name(const std::string& name, const char* what) const {
  NG_CHECK(!name.empty() && name.find('.') == std::string::npos, what,
           "names must be non-empty and contain no '.', got \"", name, "\"");
  const auto taken = [&](const auto& entries) {
    return std::any_of(entries.begin(), entries.end(),
                       [&](const auto& entry) { return entry.first == name; });
  };
  NG_CHECK(!taken(parameters_) && !taken(buffers_) && !taken(children_), what, type_name(),
           " already has a member named \"", name, "\"");
}

Tensor Module::register_parameter(const std::string& name, Tensor value, bool requires_grad) {
  check_new_name(name, "register_parameter");
  NG_CHECK(value.defined(), "register_parameter", "parameter \"", name, "\" is undefined");
  NG_CHECK(is_floating(value.dtype()), "register_parameter", "parameter \"", name,
           "\" must be floating-point, got ", value.dtype());
  // A parameter is a leaf of its own, whatever computed its initial value.
  Tensor parameter = value.is_leaf() ? value : value.detach();
  parameter.set_requires_grad(requires_grad);
  parameters_.emplace_back(name, parameter);
  return parameter;
}

Tensor Module::register_buffer(const std::string& name, Tensor value) {
  check_new_name(name, "register_buffer");
  NG_CHECK(value.defined(), "register_buffer", "buffer \"", name, "\" is undefined");
  buffers_.emplace_back(name, value.detach());
  return buffers_.back().second;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  check_new_name(name, "register_module");
  NG_CHECK(module != nullptr, "register_module", "module \"", name, "\" is null");
  children_.emplace_back(name, std::move(module));
}

void Module::collect(const std::string& prefix, bool recurse, bool buffers,
                     NamedTensors& out) const {
  for (const auto& [name, tensor] : buffers ? buffers_ : parameters_)
    out.emplace_back(prefix + name, tensor);
  if (!recurse) return;
  for (const auto& [name, child] : children_)
    child->collect(prefix + name + ".", true, buffers, out);
}

NamedTensors Module::named_parameters(bool recurse) const {
  NamedTensors out;
  collect("", recurse, false, out);
  return out;
}

NamedTensors Module::named_buffers(bool recurse) const {
  NamedTensors out;
  collect("", recurse, true, out);
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [name, tensor] : named_parameters(recurse)) out.push_back(tensor);
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_children() const {
  return children_;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

namespace {

// Puts a copy of `tensor` on `device` under the same TensorImpl, so that every handle sees it.
void move_to(const Tensor& tensor, Device device) {
  if (!tensor.defined() || tensor.device() == device) return;
  const Tensor moved = tensor.detach().to(device);  // contiguous, no autograd record
  TensorImpl* impl = tensor.impl();
  impl->storage = moved.storage();
  impl->strides = moved.strides();
  impl->offset = moved.offset();
}

}  // namespace

Module& Module::to(Device device) {
  for (auto& [name, parameter] : named_parameters()) {
    move_to(parameter, device);
    if (const Tensor grad = parameter.grad(); grad.defined() && grad.device() != device)
      parameter.set_grad(grad.to(device));
  }
  for (auto& [name, buffer] : named_buffers()) move_to(buffer, device);
  return *this;
}

void Module::zero_grad() {
  for (Tensor& parameter : parameters()) parameter.zero_grad();
}

StateDict Module::state_dict() const {
  StateDict state;
  for (const auto& [name, tensor] : named_parameters()) state[name] = tensor.detach();
  for (const auto& [name, tensor] : named_buffers()) state[name] = tensor.detach();
  return state;
}

void Module::load_state_dict(const StateDict& state, bool strict) {
  NamedTensors targets = named_parameters();
  const NamedTensors buffers = named_buffers();
  targets.insert(targets.end(), buffers.begin(), buffers.end());
  if (strict) {
    for (const auto& [name, tensor] : targets)
      NG_CHECK(state.count(name), "load_state_dict", "missing entry \"", name, "\" (shape ",
               tensor.shape(), ") for ", type_name());
    for (const auto& [name, tensor] : state) {
      const bool known =
          std::any_of(targets.begin(), targets.end(),
                      [&name = name](const auto& target) { return target.first == name; });
      NG_CHECK(known, "load_state_dict", "unexpected entry \"", name, "\" for ", type_name());
    }
  }
  // Check everything before changing anything, so a refused load leaves the module intact.
  for (const auto& [name, target] : targets) {
    auto found = state.find(name);
    if (found == state.end()) continue;
    const Tensor& source = found->second;
    NG_CHECK(source.defined() && source.shape() == target.shape(), "load_state_dict", "entry \"",
             name, "\" has shape ", source.defined() ? to_string(source.shape()) : "undefined",
             " but the module expects ", target.shape());
    NG_CHECK(source.dtype() == target.dtype(), "load_state_dict", "entry \"", name, "\" has dtype ",
             source.dtype(), " but the module expects ", target.dtype());
  }
  NoGradGuard no_grad;
  for (auto& [name, target] : targets) {
    auto found = state.find(name);
    if (found != state.end()) Tensor(target).copy_(found->second);
  }
}

namespace {

void name_modules(const Module& module, const std::string& name,
                  std::unordered_map<const void*, std::string>& names) {
  names.emplace(&module, name);
  for (const auto& [child_name, child] : module.named_children())
    name_modules(*child, name.empty() ? child_name : name + "." + child_name, names);
}

}  // namespace

std::unordered_map<const void*, std::string> module_names(const Module& root) {
  std::unordered_map<const void*, std::string> names;
  name_modules(root, "", names);
  names[&root] = root.type_name();
  return names;
}

}  // namespace normgrad::nn
