// DataParallel: buckets of gradients averaged over the ranks while backward runs.

#include "distributed/data_parallel.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <sstream>

#include "autograd/grad_mode.h"
#include "autograd/hooks.h"
#include "base/error.h"
#include "distributed/collectives.h"

namespace normgrad::distributed {

namespace {

// "parameter name" or "buffer name", and "dtype [shape]", for each parameter and buffer.
using Entries = std::vector<std::pair<std::string, std::string>>;

Entries describe_state(const nn::Module& module) {
  Entries entries;
  const auto add = [&](const char* kind, const nn::NamedTensors& tensors) {
    for (const auto& [name, tensor] : tensors) {
      std::ostringstream what;
      what << tensor.dtype() << " " << tensor.shape();
      entries.emplace_back(std::string(kind) + " " + name, what.str());
    }
  };
  add("parameter", module.named_parameters());
  add("buffer", module.named_buffers());
  return entries;
}

std::string to_text(const Entries& entries) {
  std::string text;
  for (const auto& [name, what] : entries) text += name + "\t" + what + "\n";
  return text;
}

Entries from_text(const std::string& text) {
  Entries entries;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const std::size_t tab = line.find('\t');
    entries.emplace_back(line.substr(0, tab), line.substr(tab + 1));
  }
  return entries;
}

// How rank `r`'s entries differ from rank 0's, in words: the first few differences.
std::string differences(const Entries& first, const Entries& theirs, int r) {
  const std::map<std::string, std::string> ours_by_name(first.begin(), first.end());
  const std::map<std::string, std::string> theirs_by_name(theirs.begin(), theirs.end());
  std::vector<std::string> found;
  for (const auto& [name, what] : first) {
    const auto other = theirs_by_name.find(name);
    if (other == theirs_by_name.end())
      found.push_back(detail::concat("rank ", r, " lacks rank 0's ", name, " (", what, ")"));
    else if (other->second != what)
      found.push_back(
          detail::concat(name, " is ", what, " on rank 0 but ", other->second, " on rank ", r));
  }
  for (const auto& [name, what] : theirs)
    if (!ours_by_name.contains(name))
      found.push_back(
          detail::concat("rank ", r, " has ", name, " (", what, "), which rank 0 lacks"));
  if (found.empty())  // the same entries in another order: the buckets would not line up
    for (std::size_t i = 0; i < first.size(); ++i)
      if (first[i] != theirs[i]) {
        found.push_back(detail::concat("rank ", r,
                                       " registers the same tensors in another "
                                       "order: entry ",
                                       i, " is ", first[i].first, " on rank 0 but ",
                                       theirs[i].first, " on rank ", r));
        break;
      }
  constexpr std::size_t kShown = 6;
  std::string text;
  for (std::size_t i = 0; i < std::min(found.size(), kShown); ++i) text += "\n  " + found[i];
  if (found.size() > kShown)
    text += detail::concat("\n  and ", found.size() - kShown, " more differences");
  return text;
}

}  // namespace

DataParallel::DataParallel(nn::Module& module, DataParallelOptions options)
    : module_(module), group_(ProcessGroup::world()), parameters_(module.named_parameters()) {
  NG_CHECK(options.bucket_bytes > 0, "DataParallel", "bucket_bytes must be positive, got ",
           options.bucket_bytes);
  for (const auto& [name, parameter] : parameters_)
    NG_CHECK(is_floating(parameter.dtype()), "DataParallel", "parameter ", name, " is ",
             parameter.dtype(), "; gradients are floating point");
  check_models_agree();
  broadcast_state();
  make_buckets(options.bucket_bytes);
  if (group_.size() == 1) return;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const Tensor& parameter = parameters_[i].second;
    if (!parameter.requires_grad()) {
      hooks_.push_back(0);
      continue;
    }
    hooks_.push_back(autograd::register_post_accumulate_grad_hook(
        parameter, [this, i](const Tensor&) { on_gradient(i); }));
  }
}

DataParallel::~DataParallel() {
  for (std::size_t i = 0; i < hooks_.size(); ++i)
    if (hooks_[i] != 0)
      autograd::remove_post_accumulate_grad_hook(parameters_[i].second, hooks_[i]);
}

void DataParallel::check_models_agree() const {
  const std::vector<std::string> all = all_gather_text(group_, to_text(describe_state(module_)));
  const Entries first = from_text(all[0]);
  std::string found;
  for (int r = 1; r < group_.size(); ++r) {
    const Entries theirs = from_text(all[static_cast<std::size_t>(r)]);
    if (theirs != first) found += differences(first, theirs, r);
  }
  if (!found.empty())
    throw Error(detail::concat("DataParallel on rank ", group_.rank(), " of ", group_.size(),
                               ": the ranks' models differ, and every rank must hold the same "
                               "parameters and buffers (names, dtypes, shapes, in one order):",
                               found));
}

void DataParallel::broadcast_state() {
  const NoGradGuard no_grad;
  for (const auto& [name, parameter] : parameters_) {
    if (parameter.device().is_cpu() && parameter.is_contiguous()) {
      group_.broadcast(parameter.detach(), 0);
    } else {
      Tensor host = parameter.detach().to(Device::cpu()).contiguous();
      group_.broadcast(host, 0);
      parameter.detach().copy_(host);
    }
  }
  broadcast_buffers();
}

void DataParallel::broadcast_buffers() {
  for (const auto& [name, buffer] : module_.named_buffers()) {
    Tensor host = buffer.device().is_cpu() && buffer.is_contiguous()
                      ? buffer
                      : buffer.to(Device::cpu()).contiguous();
    group_.broadcast(host, 0);
    if (!host.is_same(buffer)) Tensor(buffer).copy_(host);
  }
}

void DataParallel::make_buckets(std::int64_t bucket_bytes) {
  bucket_of_.assign(parameters_.size(), 0);
  // In reverse: the parameters used last in the forward pass get their gradients first.
  std::int64_t bytes = 0;
  for (std::size_t k = parameters_.size(); k-- > 0;) {
    const Tensor& parameter = parameters_[k].second;
    if (!parameter.requires_grad()) continue;
    const std::int64_t size =
        parameter.numel() * static_cast<std::int64_t>(element_size(parameter.dtype()));
    const Tensor* first =
        buckets_.empty() ? nullptr : &parameters_[buckets_.back().parameters.front()].second;
    const bool fits = first != nullptr && bytes + size <= bucket_bytes &&
                      first->dtype() == parameter.dtype() && first->device() == parameter.device();
    if (!fits) {
      buckets_.emplace_back();
      bytes = 0;
    }
    Bucket& bucket = buckets_.back();
    bucket_of_[k] = buckets_.size() - 1;
    bucket.offsets.push_back(bucket.parameters.empty()
                                 ? 0
                                 : bucket.offsets.back() +
                                       parameters_[bucket.parameters.back()].second.numel());
    bucket.parameters.push_back(k);
    bytes += size;
  }
  for (Bucket& bucket : buckets_) {
    const Tensor& last = parameters_[bucket.parameters.back()].second;
    const std::int64_t elements = bucket.offsets.back() + last.numel();
    // On the parameters' device when the collectives take it (CUDA with NCCL), else staged
    // through host memory.
    const Device device = collectives_on(last.device()) ? last.device() : Device::cpu();
    bucket.flat = zeros({elements + std::ssize(bucket.parameters)},
                        {.dtype = last.dtype(), .device = device});
  }
}

std::vector<std::vector<std::string>> DataParallel::bucket_names() const {
  std::vector<std::vector<std::string>> names;
  for (const Bucket& bucket : buckets_) {
    names.emplace_back();
    for (const std::size_t k : bucket.parameters) names.back().push_back(parameters_[k].first);
  }
  return names;
}

void DataParallel::on_gradient(std::size_t parameter) {
  if (no_sync_depth_ > 0) return;
  if (!in_pass_) {
    in_pass_ = true;
    autograd::queue_callback([this] { finish_pass(); });
  }
  Bucket& bucket = buckets_[bucket_of_[parameter]];
  if (++bucket.ready == bucket.parameters.size()) send_ready_buckets();
  // MPI advances the buckets in flight only inside its calls: ask after each gradient.
  for (std::size_t b = 0; b < next_to_send_; ++b) buckets_[b].work.done();
}

void DataParallel::send_ready_buckets() {
  while (next_to_send_ < buckets_.size() &&
         buckets_[next_to_send_].ready == buckets_[next_to_send_].parameters.size())
    send(buckets_[next_to_send_++]);
}

void DataParallel::send(Bucket& bucket) {
  const NoGradGuard no_grad;
  const std::int64_t flags = bucket.flat.numel() - std::ssize(bucket.parameters);
  for (std::size_t j = 0; j < bucket.parameters.size(); ++j) {
    const Tensor grad = parameters_[bucket.parameters[j]].second.grad();
    Tensor slot =
        bucket.flat.narrow(0, bucket.offsets[j], parameters_[bucket.parameters[j]].second.numel());
    if (grad.defined())
      slot.copy_(grad.reshape({-1}));
    else
      slot.zero_();
    bucket.flat.narrow(0, flags + static_cast<std::int64_t>(j), 1).fill_(grad.defined() ? 1 : 0);
  }
  bucket.work = group_.all_reduce_async(bucket.flat, ReduceOp::Sum);
}

void DataParallel::finish_pass() {
  in_pass_ = false;
  last_pass_.buckets_sent_early = next_to_send_;
  // Buckets with a parameter that this pass gave no gradient here go now, in order.
  while (next_to_send_ < buckets_.size()) send(buckets_[next_to_send_++]);
  const auto start = std::chrono::steady_clock::now();
  for (Bucket& bucket : buckets_) bucket.work.wait();
  last_pass_.seconds_waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const NoGradGuard no_grad;
  const double scale = 1.0 / group_.size();
  for (Bucket& bucket : buckets_) {
    bucket.ready = 0;
    const std::int64_t flags = bucket.flat.numel() - std::ssize(bucket.parameters);
    const std::vector<double> given =
        bucket.flat.narrow(0, flags, std::ssize(bucket.parameters)).to_vector<double>();
    for (std::size_t j = 0; j < bucket.parameters.size(); ++j) {
      if (given[j] == 0.0) continue;  // no rank had a gradient: it keeps none
      Tensor& parameter = parameters_[bucket.parameters[j]].second;
      if (!parameter.grad().defined()) parameter.set_grad(zeros_like(parameter));
      Tensor grad = parameter.grad();
      grad.copy_(
          bucket.flat.narrow(0, bucket.offsets[j], parameter.numel()).reshape(parameter.shape()));
      grad.mul_(scale);
    }
  }
  next_to_send_ = 0;
}

}  // namespace normgrad::distributed
