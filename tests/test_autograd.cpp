// Autograd semantics that users trip on: reused nodes, accumulation, backward twice,
// retain_graph, zero_grad, no-grad mode, detach, in-place changes to saved tensors, and
// the graph export; and gradcheck itself, which each op family's gradient checks rely on.

#include "helpers.h"

using namespace normgrad;
using testing::all_close;

TEST_CASE("a leaf's gradient: d(sum(x * x))/dx = 2x") {
  Tensor x = tensor({1, -2, 3}).requires_grad_();
  (x * x).sum().backward();
  CHECK(x.grad().to_vector<float>() == std::vector<float>{2, -4, 6});
  CHECK(x.is_leaf());
  CHECK_FALSE((x * x).is_leaf());
  CHECK((x * 2.0).grad_fn()->name() == std::string("MulScalarBackward"));
}

TEST_CASE("a reused interior node sums the gradients of all its uses") {
  Tensor x = tensor({2.0}).requires_grad_();
  Tensor h = x * x;          // used three times below
  Tensor y = h * h + h + h;  // dy/dx = (2h + 2) * 2x = (8 + 2) * 4 = 40
  y.sum().backward();
  CHECK(x.grad().item() == doctest::Approx(40));
}

TEST_CASE(
    "gradients summed in place at a node never change a tensor another edge or the caller "
    "holds") {
  Tensor x = tensor({1, 2, 3}).requires_grad_();
  Tensor h = x * 2.0;
  // h + h hands one gradient tensor to both of its edges, which end at the same node; the
  // uses of h after it add more; the caller's gradient for the root must come back unchanged.
  Tensor y = (h + h) * 3.0 + h + h.narrow(0, 1, 2).sum();
  const Tensor seed = tensor({1, 10, 100});
  const std::vector<float> seed_before = seed.to_vector<float>();
  y.backward(seed);
  // dy_i/dh_i = 6 + 1; the sum of h[1:3] is broadcast into every y_i, so h[1] and h[2] also
  // get the sum of the seed, 111.
  const std::vector<float> expected{2 * (1 * 7), 2 * (10 * 7 + 111), 2 * (100 * 7 + 111)};
  CHECK(x.grad().to_vector<float>() == expected);
  CHECK(seed.to_vector<float>() == seed_before);
  // Many uses of one tensor, as a recurrence reads its inputs at every step.
  Tensor z = tensor({0.5, -1}).requires_grad_();
  Tensor w = z * 1.0;
  Tensor total = w;
  for (int i = 0; i < 9; ++i) total = total + w * static_cast<double>(i);
  total.sum().backward();
  CHECK(z.grad().to_vector<float>() == std::vector<float>{37, 37});
}

TEST_CASE("a leaf's gradient is its own: never shared with another leaf or the caller") {
  // a + b hands one gradient tensor to both leaves; each must get a tensor of its own.
  Tensor a = tensor({1, 2}).requires_grad_();
  Tensor b = tensor({3, 4}).requires_grad_();
  const Tensor seed = tensor({1, 10});
  (a + b).backward(seed);
  a.grad().add_(tensor({100, 100}));
  CHECK(b.grad().to_vector<float>() == std::vector<float>{1, 10});
  CHECK(seed.to_vector<float>() == std::vector<float>{1, 10});
  // A root that is itself a leaf gets a copy of the caller's gradient, not the tensor.
  Tensor leaf = tensor({5, 6}).requires_grad_();
  Tensor gradient = tensor({7, 8});
  leaf.backward(gradient);
  gradient.add_(tensor({1, 1}));
  CHECK(leaf.grad().to_vector<float>() == std::vector<float>{7, 8});
  // A gradient that only the backward pass held is kept as it is (no copy), and the next
  // pass adds into it.
  Tensor w = tensor({1, 2, 3}).requires_grad_();
  (w * 2.0).sum().backward();
  CHECK(w.grad().to_vector<float>() == std::vector<float>{2, 2, 2});
  (w * 3.0).sum().backward();
  CHECK(w.grad().to_vector<float>() == std::vector<float>{5, 5, 5});
  // A gradient that is a view into a larger buffer (a slice's) is copied out.
  Tensor part = tensor({1, 2}).requires_grad_();
  Tensor whole = cat({part, tensor({9.0f})}, 0);
  (whole * whole).narrow(0, 0, 2).sum().backward();
  CHECK(part.grad().to_vector<float>() == std::vector<float>{2, 4});
  CHECK(part.grad().storage()->nbytes() == 2 * sizeof(float));
}

TEST_CASE("gradients accumulate across backward passes until zero_grad") {
  Tensor w = tensor({1, 2}).requires_grad_();
  (w * 3.0).sum().backward();
  (w * 3.0).sum().backward();
  CHECK(w.grad().to_vector<float>() == std::vector<float>{6, 6});
  w.zero_grad();
  CHECK_FALSE(w.grad().defined());
  (w * 5.0).sum().backward();
  CHECK(w.grad().to_vector<float>() == std::vector<float>{5, 5});
}

TEST_CASE("backward twice through saved tensors needs retain_graph") {
  Tensor x = tensor({1, 2}).requires_grad_();
  Tensor y = (x * x).sum();
  y.backward(Tensor(), /*retain_graph=*/true);
  y.backward();
  CHECK(x.grad().to_vector<float>() == std::vector<float>{4, 8});
  CHECK_ERROR(y.backward(), "MulBackward", "second time", "retain_graph");
  // A graph that saved nothing can run again.
  Tensor z = (x + x).sum();
  z.backward();
  z.backward();
  CHECK(x.grad().to_vector<float>() == std::vector<float>{8, 12});
}

TEST_CASE("a non-scalar root needs a gradient argument") {
  Tensor x = tensor({1, 2, 3}).requires_grad_();
  Tensor y = x * 2.0;
  CHECK_ERROR(y.backward(), "backward", "[3]", "gradient");
  CHECK_ERROR(y.backward(ones({2})), "backward", "[2]", "[3]");
  CHECK_ERROR(y.backward(ones({3}, {.dtype = DType::Float64})), "backward", "float64");
  y.backward(tensor({1, 0, -1}));
  CHECK(x.grad().to_vector<float>() == std::vector<float>{2, 0, -2});
}

TEST_CASE("no-grad mode and detach cut the graph") {
  Tensor x = tensor({1, 2}).requires_grad_();
  {
    NoGradGuard no_grad;
    Tensor y = x * 2.0;
    CHECK_FALSE(y.requires_grad());
    CHECK_FALSE(GradMode::is_enabled());
  }
  CHECK(GradMode::is_enabled());
  Tensor d = x.detach();
  CHECK_FALSE(d.requires_grad());
  CHECK(d.storage() == x.storage());
  CHECK_ERROR((d * 2.0).sum().backward(), "backward", "does not require grad");
  // Only the attached path contributes.
  (x * 3.0 + d * 5.0).sum().backward();
  CHECK(x.grad().to_vector<float>() == std::vector<float>{3, 3});
}

TEST_CASE("requires_grad rules") {
  CHECK_ERROR(zeros({2}, {.dtype = DType::Int64}).requires_grad_(), "set_requires_grad", "int64");
  Tensor x = ones({2}).requires_grad_();
  Tensor y = x * 2.0;
  CHECK_ERROR(y.set_requires_grad(false), "set_requires_grad", "leaf", "MulScalarBackward");
  CHECK(ones({2}, {.requires_grad = true}).requires_grad());
}

TEST_CASE("views share the graph: a gradient through a slice lands in its window") {
  Tensor x = arange(6, {.dtype = DType::Float64}).reshape({2, 3}).detach().requires_grad_();
  Tensor y = x.select(1, 2) * 10.0 + x.t().narrow(0, 0, 1).squeeze(0);
  y.sum().backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{1, 0, 10, 1, 0, 10});
}

TEST_CASE("in-place changes to tensors saved for backward are caught") {
  Tensor x = tensor({1, 2}).requires_grad_();
  Tensor y = exp(x);  // saves its output
  Tensor loss = (y * 1.0).sum();
  {
    NoGradGuard no_grad;
    y.add_(1.0);  // changes what ExpBackward saved
  }
  CHECK_ERROR(loss.backward(), "ExpBackward", "modified by an in-place operation");
}

TEST_CASE("in-place ops are refused on tensors that require grad in grad mode") {
  Tensor w = ones({2}).requires_grad_();
  CHECK_ERROR(w.add_(1.0), "add_", "requires grad", "NoGradGuard");
  CHECK_ERROR(zeros({2}).mul_(w), "mul_", "requires grad");
  {
    NoGradGuard no_grad;  // an optimizer-style update
    w.add_(ones({2}), -0.5);
  }
  CHECK(w.to_vector<float>() == std::vector<float>{0.5f, 0.5f});
  CHECK_ERROR(ones({2}).unsqueeze(0).expand({3, 2}).fill_(1), "fill_", "expanded");
  CHECK_ERROR(zeros({2}).add_(zeros({3})), "add_", "[3]", "[2]");
}

TEST_CASE("in-place ops handle operands that alias the target") {
  Tensor m = tensor({{1, 2}, {3, 4}});
  m.add_(m.t());  // must read the transpose before overwriting it
  CHECK(m.to_vector<float>() == std::vector<float>{2, 5, 5, 8});
  Tensor v = tensor({1, 2, 3});
  v.mul_(v);
  CHECK(v.to_vector<float>() == std::vector<float>{1, 4, 9});
  Tensor c = zeros({2, 2});
  c.copy_(tensor({7, 8}));  // broadcast copy
  CHECK(c.to_vector<float>() == std::vector<float>{7, 8, 7, 8});
}

TEST_CASE("a long chain runs without recursion limits") {
  Tensor x = tensor({1.0}).requires_grad_();
  Tensor y = x;
  for (int i = 0; i < 20000; ++i) y = y * 1.0;
  y.sum().backward();
  CHECK(x.grad().item() == 1.0);
}

TEST_CASE("branches that do not reach a leaf still let the others through") {
  Tensor x = tensor({3.0}).requires_grad_();
  Tensor c = tensor({2.0});
  Tensor y = x * c + c * c;  // c * c has no grad_fn
  y.sum().backward();
  CHECK(x.grad().item() == 2.0);
  CHECK_FALSE(c.grad().defined());
}

TEST_CASE("to_dot draws the backward graph") {
  Tensor w = ones({2, 2}).requires_grad_();
  Tensor x = ones({2});
  Tensor loss = relu(matmul(w, x)).sum();
  const std::string dot = to_dot(loss);
  CHECK(dot.rfind("digraph backward {", 0) == 0);
  CHECK(dot.find("SumBackward") != std::string::npos);
  CHECK(dot.find("ReluBackward") != std::string::npos);
  CHECK(dot.find("MatmulBackward") != std::string::npos);
  CHECK(dot.find("leaf [2, 2]") != std::string::npos);
  CHECK(dot.find("->") != std::string::npos);
}

using testing::leaf;
using Inputs = std::vector<Tensor>;

TEST_CASE("gradcheck itself catches a wrong gradient") {
  // y = 2x, but the 2x term is cut from the graph, so backward reports 0 instead of 2.
  const Tensor a = leaf({3});
  const auto result =
      gradcheck([](const Inputs& x) { return x[0].detach() * 2.0 + x[0] * 0.0; }, {a});
  CHECK_FALSE(result.ok);
  CHECK(result.message.find("input 0") != std::string::npos);
  CHECK_ERROR(gradcheck([](const Inputs& x) { return x[0] * 2.0; },
                        {testing::leaf({2}).to(DType::Float32).detach().requires_grad_()}),
              "gradcheck", "float64");
}
