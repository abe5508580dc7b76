// The views family (reshape, view, permute, transpose, narrow, slice, select, squeeze, unsqueeze,
// flatten, expand): new shapes and strides over the same storage, no copies, no kernels of their
// own. Their values and strides, writes seen through them, errors that name the op and the
// shapes, and float64 gradient checks of every view's backward (autograd/functions/views.cpp).
// A view made contiguous, on the CPU and on a GPU: test_copies.cpp.

#include <vector>

#include "helpers.h"

using namespace normgrad;
using testing::leaf;
using Inputs = std::vector<Tensor>;

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
  CHECK(base.to_vector<float>() == std::vector<float>{0, 1, 2, 3, -1, -1, -1, -1, 8, 9, 10, 11});
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

TEST_CASE("gradcheck: views") {
  const Tensor a = leaf({2, 3, 4});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0].reshape({6, 4}) * 1.0; }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0].permute({2, 0, 1}) * 1.0; }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0].transpose(0, 2).reshape({-1}); }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0].narrow(2, 1, 2); }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0].slice(1, 0, 3, 2); }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0].select(1, -1); }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0].unsqueeze(1).squeeze(1).flatten(); }, {a});
  CHECK_GRADIENTS([](const Inputs& x) { return x[0].unsqueeze(0).expand({3, 2, 3, 4}); }, {a});
  CHECK_GRADIENTS(
      [](const Inputs& x) {
        return x[0].sum({2}, true).expand({2, 3, 4}) * x[0];
      },
      {a});
}
