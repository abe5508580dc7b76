// Tensor core: factories, views sharing storage, contiguity, conversions, printing, and the
// errors that user mistakes get.

#include "helpers.h"

using namespace normgrad;
using testing::all_close;

TEST_CASE("factories fill, count and convert") {
  CHECK(zeros({2, 3}).to_vector<float>() == std::vector<float>(6, 0.0f));
  CHECK(ones({4}, {.dtype = DType::Float64}).to_vector<double>() == std::vector<double>(4, 1.0));
  CHECK(full({2}, 7.5).to_vector<float>() == std::vector<float>{7.5f, 7.5f});
  CHECK(arange(5).to_vector<float>() == std::vector<float>{0, 1, 2, 3, 4});
  CHECK(arange(1, 2, 0.25, {.dtype = DType::Float64}).to_vector<double>() ==
        std::vector<double>{1, 1.25, 1.5, 1.75});
  CHECK(arange(3, 0, -1, {.dtype = DType::Int64}).to_vector<std::int64_t>() ==
        std::vector<std::int64_t>{3, 2, 1});
  CHECK(arange(0).numel() == 0);
  Tensor t = tensor({{1, 2, 3}, {4, 5, 6}});
  CHECK(t.shape() == Shape{2, 3});
  CHECK(t.dtype() == DType::Float32);
  CHECK(t.device() == Device::cpu());
  CHECK(t.to(DType::Int64).to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 2, 3, 4, 5, 6});
  CHECK(scalar_tensor(3.5).dim() == 0);
  CHECK(scalar_tensor(3.5).item() == 3.5);
  CHECK(from_vector<std::int64_t>({4, 5}, {2, 1}).shape() == Shape{2, 1});
  CHECK(empty({0, 3}).numel() == 0);
}

TEST_CASE("factories refuse bad arguments with clear errors") {
  CHECK_ERROR(zeros({2, -1}), "zeros", "[2, -1]");
  CHECK_ERROR(arange(0, 1, 0), "arange", "step");
  CHECK_ERROR(from_vector<float>({1, 2, 3}, {2, 2}), "from_vector", "3 values", "[2, 2]");
  CHECK_ERROR(tensor({{1, 2}, {3}}), "tensor", "equal lengths");
  CHECK_ERROR(randint(5, 5, {2}), "randint", "low < high");
  CHECK_ERROR(rand({2}, {.dtype = DType::Int64}), "rand", "floating");
  CHECK_ERROR(zeros({2, 2}).item(), "item", "one element", "[2, 2]");
  CHECK_ERROR(zeros({2}).data_ptr<double>(), "data_ptr", "float64", "float32");
  CHECK_ERROR(Tensor().shape(), "shape", "undefined");
  // A device that does not exist: every CUDA device where there is no GPU, and the first index
  // past the last one where there are GPUs.
  if (!cuda::is_available()) {
    CHECK_ERROR(zeros({2}, {.device = Device::cuda()}), "cuda:0", "CUDA");
  } else {
    CHECK(zeros({2}, {.device = Device::cuda()}).device() == Device::cuda());
    const int past = cuda::device_count();
    const std::string past_name = "cuda:" + std::to_string(past);
    CHECK_ERROR(zeros({2}, {.device = Device::cuda(past)}), past_name.c_str(), "out of range");
  }
}

TEST_CASE("views share storage and see each other's writes") {
  Tensor base = arange(12).reshape({3, 4});
  Tensor t = base.t();
  CHECK(t.shape() == Shape{4, 3});
  CHECK(t.strides() == Strides{1, 4});
  CHECK_FALSE(t.is_contiguous());
  CHECK(t.storage() == base.storage());

  Tensor row = base.select(0, 1);
  CHECK(row.to_vector<float>() == std::vector<float>{4, 5, 6, 7});
  Tensor column = base.narrow(1, 2, 1);
  CHECK(column.shape() == Shape{3, 1});
  CHECK(column.to_vector<float>() == std::vector<float>{2, 6, 10});
  Tensor stepped = base.slice(1, 0, 4, 2);
  CHECK(stepped.to_vector<float>() == std::vector<float>{0, 2, 4, 6, 8, 10});

  row.fill_(-1);  // writes through to base
  CHECK(base.to_vector<float>() ==
        std::vector<float>{0, 1, 2, 3, -1, -1, -1, -1, 8, 9, 10, 11});
  CHECK(t.select(0, 0).to_vector<float>() == std::vector<float>{0, -1, 8});

  Tensor e = tensor({1, 2, 3}).unsqueeze(0).expand({2, 3});
  CHECK(e.strides() == Strides{0, 1});
  CHECK(e.to_vector<float>() == std::vector<float>{1, 2, 3, 1, 2, 3});
  CHECK(e.expand({4, -1, -1}).shape() == Shape{4, 2, 3});
  CHECK(tensor({1, 2}).unsqueeze(1).squeeze(1).shape() == Shape{2});
  CHECK(zeros({1, 3, 1}).squeeze().shape() == Shape{3});
  CHECK(zeros({2, 3, 4}).permute({2, 0, 1}).shape() == Shape{4, 2, 3});
  CHECK(zeros({2, 3, 4}).flatten(1).shape() == Shape{2, 12});
  CHECK(zeros({2, 3, 4}).view({-1, 4}).shape() == Shape{6, 4});
}

TEST_CASE("contiguous copies only when needed, and reshape falls back to a copy") {
  Tensor base = arange(6).reshape({2, 3});
  CHECK(base.contiguous().is_same(base));
  Tensor t = base.t();
  Tensor dense = t.contiguous();
  CHECK(dense.is_contiguous());
  CHECK(dense.storage() != base.storage());
  CHECK(dense.to_vector<float>() == std::vector<float>{0, 3, 1, 4, 2, 5});
  CHECK_ERROR(t.view({6}), "view", "without copying", "reshape");
  Tensor flat = t.reshape({6});
  CHECK(flat.to_vector<float>() == std::vector<float>{0, 3, 1, 4, 2, 5});
  // A view of a view where one is possible.
  CHECK(base.view({3, 2}).storage() == base.storage());
  CHECK(zeros({4, 6}).narrow(0, 1, 2).view({2, 2, 3}).shape() == Shape{2, 2, 3});
}

TEST_CASE("view errors name the op and the shapes") {
  Tensor x = zeros({2, 3});
  CHECK_ERROR(x.view({4, 2}), "view", "[4, 2]", "6 elements");
  CHECK_ERROR(x.view({-1, -1}), "view", "only one dim");
  CHECK_ERROR(x.permute({0}), "permute", "rank 2");
  CHECK_ERROR(x.permute({0, 0}), "permute", "repeated");
  CHECK_ERROR(x.transpose(0, 2), "transpose", "dim 2", "rank 2");
  CHECK_ERROR(x.narrow(1, 2, 2), "narrow", "[2, 4)", "size 3");
  CHECK_ERROR(x.select(0, 5), "select", "index 5", "size 2");
  CHECK_ERROR(x.expand({2, 4}), "expand", "[2, 3]", "[2, 4]");
  CHECK_ERROR(x.expand({3}), "expand", "fewer dims");
  CHECK_ERROR(zeros({2, 3, 4}).t(), "t", "rank <= 2");
  CHECK_ERROR(x.slice(0, 0, 1, 0), "slice", "step");
}

TEST_CASE("to(dtype) converts values and to(device) to the same device is free") {
  Tensor x = tensor({1.5, -2.25, 3.0});
  CHECK(x.to(DType::Float64).to_vector<double>() == std::vector<double>{1.5, -2.25, 3.0});
  CHECK(x.to(DType::Int64).to_vector<std::int64_t>() == std::vector<std::int64_t>{1, -2, 3});
  CHECK(x.to(DType::Float32).is_same(x));
  CHECK(x.to(Device::cpu()).is_same(x));
  // Past the last GPU (cuda:0 where there is none) is refused, naming the device.
  const int past = cuda::device_count();
  const std::string past_name = "cuda:" + std::to_string(past);
  CHECK_ERROR(x.to(Device::cuda(past)), past_name.c_str());
  if (cuda::is_available()) {
    const Tensor on_gpu = x.to(Device::cuda());
    CHECK(on_gpu.to(Device::cuda()).is_same(on_gpu));
    CHECK(on_gpu.to(Device::cpu()).to_vector<float>() == x.to_vector<float>());
  }
}

TEST_CASE("printing shows values, shape, dtype and device") {
  const std::string text = tensor({{1, 2}, {3, 4.5}}).str();
  CHECK(text.find("[[1.0000, 2.0000],") != std::string::npos);
  CHECK(text.find("shape=[2, 2]") != std::string::npos);
  CHECK(text.find("dtype=float32") != std::string::npos);
  CHECK(text.find("device=cpu") != std::string::npos);
  CHECK(arange(3, {.dtype = DType::Int64}).str().find("[0, 1, 2]") != std::string::npos);
  CHECK(scalar_tensor(2).str().find("tensor(2.0000") == 0);
  const std::string big = zeros({100, 100}).str();
  CHECK(big.find("...") != std::string::npos);
  CHECK(big.size() < 2000);
  CHECK(ones({2}).requires_grad_().str().find("requires_grad") != std::string::npos);
  std::ostringstream stream;
  stream << zeros({1});
  CHECK(stream.str() == zeros({1}).str());
}
