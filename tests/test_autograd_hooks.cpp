// Post-accumulate-grad hooks (autograd/hooks.h): when they run, what they see, and in what
// order, as data-parallel training relies on them to send gradients during backward.

#include <string>
#include <vector>

#include "autograd/hooks.h"
#include "helpers.h"

using namespace normgrad;

TEST_CASE("a post-accumulate hook runs once per backward, after the leaf's uses are summed") {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  std::vector<std::vector<float>> seen;
  autograd::register_post_accumulate_grad_hook(
      x, [&](const Tensor& leaf) { seen.push_back(leaf.grad().to_vector<float>()); });
  // x is used twice: the hook sees the sum of both uses' gradients, 2 + 3, once.
  (x * 2.0 + x * 3.0).sum().backward();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0] == std::vector<float>{5, 5});
  // A second pass accumulates, and the hook sees the accumulated gradient.
  (x * 2.0 + x * 3.0).sum().backward();
  REQUIRE(seen.size() == 2);
  CHECK(seen[1] == std::vector<float>{10, 10});
}

TEST_CASE("post-accumulate hooks run as each leaf's gradient is final, nearest the loss first") {
  // loss = sum(w2 * tanh(w1 * x)): w2's gradient is final before backward reaches w1.
  Tensor x = tensor({0.5, -1.0});
  Tensor w1 = tensor({1.0, 2.0}).requires_grad_();
  Tensor w2 = tensor({3.0, 4.0}).requires_grad_();
  std::vector<std::string> order;
  autograd::register_post_accumulate_grad_hook(w1, [&](const Tensor&) { order.push_back("w1"); });
  autograd::register_post_accumulate_grad_hook(w2, [&](const Tensor& leaf) {
    order.push_back("w2");
    CHECK_FALSE(w1.grad().defined());  // backward has not reached w1 yet
    CHECK(leaf.grad().defined());
  });
  (w2 * tanh(w1 * x)).sum().backward();
  CHECK(order == std::vector<std::string>{"w2", "w1"});
}

TEST_CASE("post-accumulate hooks: several in order, removal, and refusals") {
  Tensor w = tensor({1.0}).requires_grad_();
  std::string calls;
  const auto a =
      autograd::register_post_accumulate_grad_hook(w, [&](const Tensor&) { calls += "a"; });
  autograd::register_post_accumulate_grad_hook(w, [&](const Tensor&) { calls += "b"; });
  (w * 2.0).sum().backward();
  CHECK(calls == "ab");
  autograd::remove_post_accumulate_grad_hook(w, a);
  (w * 2.0).sum().backward();
  CHECK(calls == "abb");
  CHECK_ERROR(autograd::remove_post_accumulate_grad_hook(w, a), "has no hook");
  // Not leaves requiring grad: an op's result, a plain tensor.
  CHECK_ERROR(autograd::register_post_accumulate_grad_hook(w * 2.0, [](const Tensor&) {}),
              "needs a leaf that requires grad", "the result of an op");
  CHECK_ERROR(autograd::register_post_accumulate_grad_hook(tensor({1.0}), [](const Tensor&) {}),
              "does not require grad");
  CHECK_ERROR(autograd::register_post_accumulate_grad_hook(w, nullptr), "the hook is empty");
}

TEST_CASE("queue_callback runs after the pass, and only within one") {
  CHECK_ERROR(autograd::queue_callback([] {}), "queue_callback", "no backward pass");
  Tensor w = ones({2}).requires_grad_();
  std::vector<std::string> events;
  autograd::register_post_accumulate_grad_hook(w, [&](const Tensor&) {
    events.push_back("hook");
    autograd::queue_callback([&] {
      events.push_back("callback");
      autograd::queue_callback([&] { events.push_back("queued by a callback"); });
    });
  });
  (w * 3.0).sum().backward();
  events.push_back("after backward");
  CHECK(events ==
        std::vector<std::string>{"hook", "callback", "queued by a callback", "after backward"});
  // A hook that throws ends its pass, and the callbacks queued in it are dropped.
  Tensor v = ones({1}).requires_grad_();
  autograd::register_post_accumulate_grad_hook(v, [&](const Tensor&) {
    autograd::queue_callback([&] { events.push_back("dropped"); });
    throw Error("the hook stops");
  });
  CHECK_ERROR((v * 2.0).sum().backward(), "the hook stops");
  events.clear();
  (w * 3.0).sum().backward();
  CHECK(events == std::vector<std::string>{"hook", "callback", "queued by a callback"});
  CHECK_ERROR(autograd::queue_callback([] {}), "no backward pass");
}
