// CUDA graphs (core/cuda.h's Graph): a captured training step (clipping included, on the
// device) replays as the eager step runs, bit for bit, with the optimizer stepping between
// replays, and a whole step with capturable Adam inside the graph to a few ulps; memory made during
// a capture is the graph's alone; captured dropout draws the eager step's masks, new ones at
// each replay; a capture that reads back fails cleanly and can be retried; and without a GPU a
// Graph is refused with a clear error.

#include <memory>
#include <vector>

#include "cuda_parity.h"
#include "helpers.h"
#include "normgrad.h"

using namespace normgrad;
using testing::error_of;

namespace {

// A small classifier with a norm, the same on every call with the same seed; with dropout
// drawing from `noise` after the activation when one is given.
std::shared_ptr<nn::Sequential> make_model(Device device, Generator* noise = nullptr) {
  manual_seed(41);
  auto model = std::make_shared<nn::Sequential>();
  model->push_back(std::make_shared<nn::Linear>(12, 32));
  model->push_back(std::make_shared<nn::RMSNorm>(Shape{32}));
  model->push_back(std::make_shared<nn::ReLU>());
  if (noise != nullptr) model->push_back(std::make_shared<nn::Dropout>(0.3, noise));
  model->push_back(std::make_shared<nn::Linear>(32, 5));
  model->to(device);
  return model;
}

struct Batch {
  Tensor inputs, targets;
};

std::vector<Batch> batches(int count) {
  Generator generator(42);
  std::vector<Batch> out;
  for (int i = 0; i < count; ++i) {
    const Tensor inputs = randn({16, 12}, generator);
    out.push_back({inputs, argmax(matmul(inputs, randn({12, 5}, generator)), 1)});
  }
  return out;
}

}  // namespace

TEST_CASE("without a GPU, a CUDA graph is refused with a clear error") {
  if (cuda::is_available()) {
    MESSAGE("skipped: a CUDA device is present");
    return;
  }
  const std::string message = error_of([] { cuda::Graph graph; });
  CAPTURE(message);
  CHECK(message.find("cuda:0") != std::string::npos);
  CHECK(!error_of([] { (void)cuda::is_capturing(); }).empty());
}

TEST_CASE("a captured training step replays as the eager step runs, optimizer steps between") {
  SKIP_WITHOUT_CUDA();
  const Device gpu = Device::cuda();
  const std::vector<Batch> data = batches(4);
  auto captured = make_model(gpu), eager = make_model(gpu);
  optim::SGD captured_sgd(captured->parameters(), {.lr = 0.1, .momentum = 0.9});
  optim::SGD eager_sgd(eager->parameters(), {.lr = 0.1, .momentum = 0.9});

  // The step's inputs, made before the capture and refilled before each replay.
  Tensor inputs = data[0].inputs.to(gpu), targets = data[0].targets.to(gpu);
  Tensor loss, norm;
  const auto step = [&] {
    captured->zero_grad();
    loss = nn::cross_entropy(captured->forward(inputs), targets);
    loss.backward();
    norm = optim::clip_grad_norm_on_device(captured->parameters(), 0.5);
  };
  step();  // eager: the checks of the targets and indices, the allocator's cache
  cuda::Graph graph;
  graph.capture(step);
  CHECK(graph.captured());
  CHECK(graph.size() > 10);

  for (const Batch& batch : data) {
    inputs.copy_(batch.inputs);
    targets.copy_(batch.targets);
    graph.replay();
    const double replayed = loss.item();
    captured_sgd.step();

    eager->zero_grad();
    const Tensor eager_loss =
        nn::cross_entropy(eager->forward(batch.inputs.to(gpu)), batch.targets.to(gpu));
    eager_loss.backward();
    const double eager_norm = optim::clip_grad_norm(eager->parameters(), 0.5);
    eager_sgd.step();
    CHECK(replayed == eager_loss.item());
    CHECK(norm.item() == eager_norm);
  }
  const std::vector<Tensor> a = captured->parameters(), b = eager->parameters();
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    CHECK_NO_MISMATCH(testing::bits_mismatch(a[i].to(Device::cpu()), b[i].to(Device::cpu())));
    CHECK_NO_MISMATCH(
        testing::bits_mismatch(a[i].grad().to(Device::cpu()), b[i].grad().to(Device::cpu())));
  }
}

TEST_CASE("a whole training step, capturable Adam included, replays as the eager step runs") {
  SKIP_WITHOUT_CUDA();
  const Device gpu = Device::cuda();
  const std::vector<Batch> data = batches(5);
  auto captured = make_model(gpu), eager = make_model(gpu);
  optim::Adam captured_adam(captured->parameters(), {.lr = 0.01, .capturable = true});
  optim::Adam eager_adam(eager->parameters(), {.lr = 0.01});
  Tensor inputs = data[0].inputs.to(gpu), targets = data[0].targets.to(gpu);
  Tensor loss;
  const auto step = [&] {
    captured->zero_grad();
    loss = nn::cross_entropy(captured->forward(inputs), targets);
    loss.backward();
    optim::clip_grad_norm_on_device(captured->parameters(), 0.5);
    captured_adam.step();
  };
  const auto eager_step = [&](const Batch& batch) {
    eager->zero_grad();
    const Tensor eager_loss =
        nn::cross_entropy(eager->forward(batch.inputs.to(gpu)), batch.targets.to(gpu));
    eager_loss.backward();
    optim::clip_grad_norm(eager->parameters(), 0.5);
    eager_adam.step();
    return eager_loss.item();
  };
  step();  // the warm-up steps both models once
  CHECK(loss.item() == eager_step(data[0]));
  cuda::Graph graph;
  graph.capture(step);
  for (std::size_t b = 1; b < data.size(); ++b) {
    inputs.copy_(data[b].inputs);
    targets.copy_(data[b].targets);
    graph.replay();
    const double replayed = loss.item(), expected = eager_step(data[b]);
    CAPTURE(b);
    // The bias corrections come from the GPU's pow here and the host's there: a few ulps.
    CHECK(replayed == doctest::Approx(expected).epsilon(1e-5));
  }
  CHECK(captured_adam.step_count(0) == static_cast<std::int64_t>(data.size()));
  const std::vector<Tensor> a = captured->parameters(), b = eager->parameters();
  for (std::size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    CHECK(testing::all_close(a[i].to(Device::cpu()), b[i].to(Device::cpu()), 1e-5, 1e-6));
  }
}

TEST_CASE("captured dropout draws the eager step's masks at each replay, new ones each time") {
  SKIP_WITHOUT_CUDA();
  const Device gpu = Device::cuda();
  const std::vector<Batch> data = batches(4);
  Generator captured_noise(77), eager_noise(77);
  auto captured = make_model(gpu, &captured_noise), eager = make_model(gpu, &eager_noise);
  Tensor inputs = data[0].inputs.to(gpu), targets = data[0].targets.to(gpu);
  Tensor loss;
  const auto step = [&] {
    captured->zero_grad();
    loss = nn::cross_entropy(captured->forward(inputs), targets);
    loss.backward();
  };
  step();
  const std::uint64_t drawn = captured_noise.offset();
  CHECK(drawn == 16 * 32);
  cuda::Graph graph;
  graph.capture(step);
  CHECK(captured_noise.offset() == drawn);  // a capture draws nothing
  captured_noise.manual_seed(77);           // replays start where the eager twin starts

  for (const Batch& batch : data) {
    inputs.copy_(batch.inputs);
    targets.copy_(batch.targets);
    graph.replay();
    eager->zero_grad();
    const Tensor eager_loss =
        nn::cross_entropy(eager->forward(batch.inputs.to(gpu)), batch.targets.to(gpu));
    eager_loss.backward();
    CHECK(loss.item() == eager_loss.item());
    const std::vector<Tensor> a = captured->parameters(), b = eager->parameters();
    for (std::size_t i = 0; i < a.size(); ++i) {
      CAPTURE(i);
      CHECK_NO_MISMATCH(
          testing::bits_mismatch(a[i].grad().to(Device::cpu()), b[i].grad().to(Device::cpu())));
    }
  }
  CHECK(captured_noise.offset() == eager_noise.offset());
  // The same batch again: new masks, so another loss.
  const double before = loss.item();
  graph.replay();
  CHECK(loss.item() != before);
  // A generator seeded again between replays is read at the next one.
  captured_noise.manual_seed(78);
  graph.replay();
  const double reseeded = loss.item();
  captured_noise.manual_seed(78);
  graph.replay();
  CHECK(loss.item() == reseeded);
}

TEST_CASE("memory made during a capture is the graph's: eager work never reuses it") {
  SKIP_WITHOUT_CUDA();
  const Device gpu = Device::cuda();
  const Tensor x = arange(0, 4096, 1, {.device = gpu});
  Tensor doubled;
  cuda::Graph graph;
  graph.capture([&] {
    const Tensor scratch = x * 4.0;  // freed inside the capture: reused there, never outside
    doubled = scratch * 0.5;
  });
  Tensor tripled = x * 3.0;  // eager, after the capture: its own memory
  graph.replay();
  std::vector<Tensor> more;
  for (int i = 0; i < 8; ++i) more.push_back(x * 7.0);  // eager allocations of the same size
  graph.replay();
  CHECK(testing::all_close(doubled.to(Device::cpu()), (x * 2.0).to(Device::cpu()), 0, 0));
  CHECK(testing::all_close(tripled.to(Device::cpu()), (x * 3.0).to(Device::cpu()), 0, 0));
  for (const Tensor& t : more)
    CHECK(testing::all_close(t.to(Device::cpu()), (x * 7.0).to(Device::cpu()), 0, 0));
}

TEST_CASE("a capture that reads back fails with a clear error, and the graph captures again") {
  SKIP_WITHOUT_CUDA();
  const Device gpu = Device::cuda();
  const Tensor x = randn({64}).to(gpu);
  Tensor y;
  cuda::Graph graph;
  const std::string read = error_of([&] { graph.capture([&] { (void)(x * 2.0).sum().item(); }); });
  CAPTURE(read);
  CHECK(read.find("cuda::Graph::capture") != std::string::npos);
  CHECK(read.find("read back") != std::string::npos);
  CHECK(!graph.captured());
  CHECK(!cuda::is_capturing());
  const std::string copied =
      error_of([&] { graph.capture([&] { y = x + from_vector<float>({1}, {1}).to(gpu); }); });
  CAPTURE(copied);
  CHECK(copied.find("copied to the device") != std::string::npos);

  graph.capture([&] { y = x * 2.0; });
  graph.replay();
  CHECK(testing::all_close(y.to(Device::cpu()), (x * 2.0).to(Device::cpu()), 0, 0));
  const std::string twice = error_of([&] { graph.capture([&] { y = x * 3.0; }); });
  CHECK(twice.find("holds a capture already") != std::string::npos);
  // Eager work still runs after the failed captures.
  CHECK((x * 0.0).sum().item() == 0.0);
}
