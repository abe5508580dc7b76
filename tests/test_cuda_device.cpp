// Devices as the user sees them, with or without a GPU: cuda::is_available() agrees with
// cuda::device_count(); without a device, CUDA tensors, tensor moves and module moves fail with
// an Error that says so and leave the module whole; Module::to(cpu) on a CPU module keeps its
// tensors; the TF32 switch. With a GPU: round trips keep every bit, to() is differentiable,
// Module::to moves parameters, gradients and buffers in place, and ops that mix devices name
// both.

#include <string>

#include "cuda_parity.h"

using namespace normgrad;
using testing::bits_mismatch;
using testing::error_of;

namespace {

// What an Error about a missing device says, in either kind of build: without the CUDA
// backend ("no CUDA backend") or with it on a machine without a GPU ("no CUDA device").
void check_says_no_device(const std::string& message) {
  INFO("message: " << message);
  CHECK(message.find("cuda") != std::string::npos);
  CHECK((message.find("no CUDA device") != std::string::npos ||
         message.find("no CUDA backend") != std::string::npos));
}

}  // namespace

TEST_CASE("cuda device_count and is_available agree") {
  const int count = cuda::device_count();
  CHECK(count >= 0);
  CHECK(cuda::is_available() == (count > 0));
  MESSAGE("CUDA devices present: " << count);
}

TEST_CASE("without a cuda device, CUDA tensors and moves throw an Error saying there is none") {
  if (cuda::is_available()) {
    MESSAGE("skipped: a CUDA device is present");
    return;
  }
  const TensorOptions on_gpu{.device = Device::cuda()};
  check_says_no_device(error_of([&] { (void)zeros({2, 3}, on_gpu); }));
  check_says_no_device(error_of([&] { (void)full({2}, 1.5, on_gpu); }));
  check_says_no_device(error_of([&] { (void)arange(5.0, on_gpu); }));
  check_says_no_device(error_of([&] { (void)tensor({1.0, 2.0}, on_gpu); }));
  Generator generator(1);
  check_says_no_device(error_of([&] { (void)randn({4}, generator, on_gpu); }));
  CHECK(generator.offset() == 0);  // a failed draw reserves no numbers
  const Tensor x = ones({2, 2});
  check_says_no_device(error_of([&] { (void)x.to(Device::cuda()); }));
  check_says_no_device(error_of([] { (void)memory_stats(Device::cuda()); }));
  check_says_no_device(error_of([] { cuda::synchronize(); }));
  check_says_no_device(error_of([] { (void)cuda::host_waits(); }));
}

TEST_CASE("without a cuda device, Module::to(cuda) throws and leaves the module on the cpu") {
  if (cuda::is_available()) {
    MESSAGE("skipped: a CUDA device is present");
    return;
  }
  nn::Linear layer(3, 2);
  const std::vector<float> weight_before = layer.weight.to_vector<float>();
  check_says_no_device(error_of([&] { layer.to(Device::cuda()); }));
  for (const auto& entry : layer.named_parameters()) {
    const auto& [name, parameter] = entry;
    CAPTURE(entry.first);  // a binding cannot be captured (clang 14)
    CHECK(parameter.device() == Device::cpu());
  }
  CHECK(layer.weight.to_vector<float>() == weight_before);
  CHECK(layer.forward(ones({1, 3})).shape() == Shape{1, 2});  // still usable

  nn::BatchNorm1d norm(4);
  check_says_no_device(error_of([&] { norm.to(Device::cuda()); }));
  CHECK(norm.running_mean.device() == Device::cpu());
}

TEST_CASE("Module::to(cpu) on a cpu module keeps the very same tensors, device unchanged") {
  nn::Linear layer(3, 2);
  nn::BatchNorm1d norm(2);
  layer.forward(ones({4, 3})).sum().backward();
  std::vector<Tensor> handles;
  std::vector<const void*> data;
  for (nn::Module* module : {static_cast<nn::Module*>(&layer), static_cast<nn::Module*>(&norm)}) {
    for (const auto& [name, tensor] : module->named_parameters()) {
      handles.push_back(tensor);
      data.push_back(tensor.storage()->data());
    }
    for (const auto& [name, tensor] : module->named_buffers()) {
      handles.push_back(tensor);
      data.push_back(tensor.storage()->data());
    }
  }
  const Tensor weight_grad = layer.weight.grad();
  CHECK(&layer.to(Device::cpu()) == &layer);  // returns itself, for chaining
  norm.to(Device::cpu());
  std::size_t i = 0;
  for (nn::Module* module : {static_cast<nn::Module*>(&layer), static_cast<nn::Module*>(&norm)}) {
    nn::NamedTensors tensors = module->named_parameters();
    const nn::NamedTensors buffers = module->named_buffers();
    tensors.insert(tensors.end(), buffers.begin(), buffers.end());
    for (const auto& entry : tensors) {
      const auto& [name, tensor] = entry;
      CAPTURE(entry.first);  // a binding cannot be captured (clang 14)
      REQUIRE(i < handles.size());
      CHECK(tensor.is_same(handles[i]));
      CHECK(tensor.storage()->data() == data[i]);
      CHECK(tensor.device() == Device::cpu());
      ++i;
    }
  }
  CHECK(i == handles.size());
  CHECK(layer.weight.grad().is_same(weight_grad));  // the gradient stays too
}

TEST_CASE("cuda TF32 matrix products are off by default and set_allow_tf32 toggles them") {
  CHECK_FALSE(cuda::allow_tf32());
  cuda::set_allow_tf32(true);
  CHECK(cuda::allow_tf32());
  cuda::set_allow_tf32(false);
  CHECK_FALSE(cuda::allow_tf32());
}

TEST_CASE("cuda round trips keep every bit, for each dtype and for views") {
  SKIP_WITHOUT_CUDA();
  const Tensor f32 = testing::normal({5, 7}, 1);
  const Tensor f64 = testing::normal({5, 7}, 2, DType::Float64);
  Generator generator(3);
  const Tensor i64 = randint(-1000000, 1000000, {5, 7}, generator);
  for (const Tensor& host : {f32, f64, i64}) {
    CAPTURE(host.dtype());
    const Tensor gpu = host.to(Device::cuda());
    CHECK(gpu.device() == Device::cuda());
    CHECK(gpu.dtype() == host.dtype());
    CHECK(gpu.to(Device::cuda()).is_same(gpu));  // already there: no copy
    CHECK_NO_MISMATCH(bits_mismatch(host, gpu.to(Device::cpu())));
    CHECK_NO_MISMATCH(bits_mismatch(host, gpu));  // to_vector reads device memory too
    // A non-contiguous view moves as its values.
    CHECK_NO_MISMATCH(bits_mismatch(host.t().slice(0, 1, 7, 2), gpu.t().slice(0, 1, 7, 2)));
    CHECK_NO_MISMATCH(
        bits_mismatch(host.t().slice(0, 1, 7, 2), host.t().slice(0, 1, 7, 2).to(Device::cuda())));
  }
  CHECK(f64.to(Device::cuda()).select(0, 2).select(0, 3).item() ==
        f64.select(0, 2).select(0, 3).item());
}

TEST_CASE("cuda moves are differentiable: the gradient comes back to the source device") {
  SKIP_WITHOUT_CUDA();
  const Tensor x = testing::normal({3, 4}, 4).requires_grad_();
  const Tensor y = (x.to(Device::cuda()) * 2.0).sum();
  CHECK(y.device() == Device::cuda());
  y.backward();
  REQUIRE(x.grad().defined());
  CHECK(x.grad().device() == Device::cpu());
  CHECK(x.grad().to_vector<float>() == std::vector<float>(12, 2.0f));
}

TEST_CASE("Module::to(cuda) moves parameters, their gradients and buffers in place") {
  SKIP_WITHOUT_CUDA();
  nn::Linear layer(3, 2);
  nn::BatchNorm1d norm(2);
  norm.forward(layer.forward(testing::normal({4, 3}, 5))).sum().backward();
  const Tensor weight = layer.weight;  // a handle taken before the move
  const std::vector<float> weight_values = weight.to_vector<float>();
  const std::vector<float> grad_values = weight.grad().to_vector<float>();
  const std::vector<float> running_mean = norm.running_mean.to_vector<float>();
  layer.to(Device::cuda());
  norm.to(Device::cuda());
  CHECK(weight.device() == Device::cuda());  // the old handle sees the new memory
  CHECK(weight.to_vector<float>() == weight_values);
  REQUIRE(weight.grad().defined());
  CHECK(weight.grad().device() == Device::cuda());
  CHECK(weight.grad().to_vector<float>() == grad_values);
  CHECK(norm.running_mean.device() == Device::cuda());
  CHECK(norm.running_mean.to_vector<float>() == running_mean);
  for (const auto& entry : norm.named_parameters()) {
    const auto& [name, parameter] = entry;
    CAPTURE(entry.first);  // a binding cannot be captured (clang 14)
    CHECK(parameter.device() == Device::cuda());
    CHECK(parameter.requires_grad());
  }
  // And back.
  layer.to(Device::cpu());
  CHECK(weight.device() == Device::cpu());
  CHECK(weight.to_vector<float>() == weight_values);
}

TEST_CASE("with a cuda device, ops that mix cpu and cuda tensors throw an Error naming both") {
  SKIP_WITHOUT_CUDA();
  const Tensor host = ones({2, 3});
  const Tensor gpu = ones({2, 3}, {.device = Device::cuda()});
  CHECK_ERROR(host + gpu, "cpu", "cuda:0");
  CHECK_ERROR(gpu * host, "cpu", "cuda:0");
  CHECK_ERROR(matmul(host, gpu.t()), "cpu", "cuda:0");
  CHECK_ERROR(where(host, gpu, gpu), "cpu", "cuda:0");
  CHECK_ERROR(cat({host, gpu}), "cpu", "cuda:0");
  CHECK_ERROR(index_select(gpu, 0, tensor({1.0, 0.0}, {.dtype = DType::Int64})), "cpu", "cuda:0");
  CHECK_ERROR(layer_norm(gpu, 1, ones({3}), Tensor()), "cpu", "cuda:0");
  CHECK_ERROR(conv2d(ones({1, 1, 3, 3}), ones({1, 1, 2, 2}, {.device = Device::cuda()})), "cpu",
              "cuda:0");
  nn::Linear layer(3, 2);
  layer.to(Device::cuda());
  CHECK_ERROR(layer.forward(host), "cpu", "cuda:0");
  CHECK_ERROR(Tensor(gpu).add_(host), "cpu", "cuda:0");
}
