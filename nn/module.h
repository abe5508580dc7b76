#pragma once
// Module: the base of every layer and model, in the spirit of libtorch's nn::Module.
//
// A module owns named parameters (tensors that training updates), buffers (state that is
// saved but not trained, such as BatchNorm's running statistics) and child modules. Names
// nest with dots: a Linear registered as "fc1" has the parameter "fc1.weight".
//
//   struct Mlp : nn::Module {
//     Tensor w, b;
//     Mlp() {
//       w = register_parameter("w", randn({4, 2}));
//       b = register_parameter("b", zeros({4}));
//     }
//   };
//
// Tensor is a handle, so the member and the registered entry are the same tensor: an
// optimizer step or load_state_dict() that writes into one is seen through the other.

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace normgrad::nn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
using StateDict = std::map<std::string, Tensor>;

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The module's kind, for messages and printing ("Linear", "RMSNorm", ...).
  virtual std::string type_name() const { return "Module"; }

  // ---- what it holds ----------------------------------------------------------------------
  std::vector<Tensor> parameters(bool recurse = true) const;
  NamedTensors named_parameters(bool recurse = true) const;
  NamedTensors named_buffers(bool recurse = true) const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const;

  // ---- modes ------------------------------------------------------------------------------
  // Training mode (the default) or evaluation mode, for this module and all its children.
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  void zero_grad();  // drops the gradients of all parameters

  // Moves every parameter and buffer (and a parameter's gradient) to `device`, in place: the
  // members and handles that refer to them see the new memory, so an optimizer built before
  // the move keeps working. Returns *this, for chaining.
  Module& to(Device device);

  // ---- state ------------------------------------------------------------------------------
  // Parameters and buffers by their dotted names, detached (sharing storage).
  StateDict state_dict() const;
  // Copies values into the registered tensors, in place. Every name must be present with
  // its shape and dtype, and no unknown name may appear (unless strict is false, which
  // skips both checks but still refuses shape and dtype mismatches).
  void load_state_dict(const StateDict& state, bool strict = true);

 protected:
  // Registers a parameter (a leaf that requires grad) and returns it.
  Tensor register_parameter(const std::string& name, Tensor value, bool requires_grad = true);
  Tensor register_buffer(const std::string& name, Tensor value);
  template <typename ModuleType>
  std::shared_ptr<ModuleType> register_module(const std::string& name,
                                              std::shared_ptr<ModuleType> module) {
    add_child(name, module);
    return module;
  }

 private:
  void check_new_name(const std::string& name, const char* what) const;
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  void collect(const std::string& prefix, bool recurse, bool buffers, NamedTensors& out) const;

  NamedTensors parameters_;
  NamedTensors buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

// Every module of `root`'s tree by its address, named by its place: "encoder.layers.0.norm1",
// the root by its type. A profile given them names the spans of the modules' forwards
// (profiler/profile.h).
std::unordered_map<const void*, std::string> module_names(const Module& root);

}  // namespace normgrad::nn
