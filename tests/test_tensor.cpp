// Tensor core: factories, printing, and the errors that user mistakes get. Views are
// test_views.cpp's; contiguity and conversions test_copies.cpp's.

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
  CHECK(t.to(DType::Int64).to_vector<std::int64_t>() ==
        std::vector<std::int64_t>{1, 2, 3, 4, 5, 6});
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
