// Checkpoints (io/checkpoint.h): round trips, a file written by Python's safetensors, atomic
// writes (also when the writer is killed mid-save), and refusal of broken or mismatched files.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "helpers.h"

using namespace normgrad;
using testing::all_close;
namespace fs = std::filesystem;

namespace {

// A fresh folder per test, removed afterwards.
struct TemporaryFolder {
  fs::path path;
  TemporaryFolder() {
    path = fs::temp_directory_path() / ("normgrad-checkpoint-" + std::to_string(::getpid()) + "-" +
                                        std::to_string(counter()++));
    fs::create_directories(path);
  }
  ~TemporaryFolder() { fs::remove_all(path); }
  std::string file(const char* name) const { return (path / name).string(); }
  static int& counter() {
    static int value = 0;
    return value;
  }
};

std::shared_ptr<nn::Sequential> small_model(std::uint64_t seed) {
  manual_seed(seed);
  auto model = std::make_shared<nn::Sequential>();
  model->push_back(std::make_shared<nn::Linear>(4, 3));
  model->push_back(std::make_shared<nn::BatchNorm1d>(3));
  model->push_back(nn::make_norm("rmsnorm", 3));
  return model;
}

std::string read_bytes(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

bool same_state(const nn::Module& a, const nn::Module& b) {
  const auto x = a.state_dict(), y = b.state_dict();
  if (x.size() != y.size()) return false;
  for (const auto& [name, tensor] : x)
    if (!y.count(name) || !all_close(tensor, y.at(name), 0, 0)) return false;
  return true;
}

}  // namespace

TEST_CASE("save and load round-trip a model's parameters and buffers, and metadata") {
  TemporaryFolder folder;
  auto model = small_model(1);
  model->forward(randn({8, 4}));  // moves BatchNorm's running statistics off their start
  io::save(*model, folder.file("model.safetensors"), {{"step", "10"}});
  auto other = small_model(2);
  CHECK_FALSE(same_state(*model, *other));
  io::load(*other, folder.file("model.safetensors"));
  CHECK(same_state(*model, *other));
  io::Metadata metadata;
  const auto tensors = io::load_tensors(folder.file("model.safetensors"), &metadata);
  CHECK(tensors.count("1.running_mean") == 1);
  CHECK(metadata.at("step") == "10");
  // Nothing but the checkpoint is left in the folder, and others may read it.
  CHECK(std::distance(fs::directory_iterator(folder.path), fs::directory_iterator()) == 1);
  const auto permissions = fs::status(folder.file("model.safetensors")).permissions();
  CHECK((permissions & fs::perms::others_read) != fs::perms::none);
}

TEST_CASE("a file written by Python's safetensors loads with its dtypes, shapes and values") {
  io::Metadata metadata;
  const auto tensors =
      io::load_tensors(std::string(NORMGRAD_FIXTURES_DIR) + "/interop.safetensors", &metadata);
  REQUIRE(tensors.size() == 4);
  const Tensor& weight = tensors.at("layer.weight");
  CHECK(weight.dtype() == DType::Float32);
  CHECK(all_close(weight, {0.5, -1.0, 2.0, 3.5, 0.0, -4.5}, 0, 0));
  CHECK(weight.shape() == Shape{2, 3});
  CHECK(tensors.at("layer.scale").dtype() == DType::Float64);
  CHECK(all_close(tensors.at("layer.scale"), {1.0, -0.5, 8.0}, 0, 0));
  CHECK(tensors.at("steps").dtype() == DType::Int64);
  CHECK(tensors.at("steps").shape() == Shape{});
  CHECK(tensors.at("steps").item<std::int64_t>() == 12345678901);
  CHECK(tensors.at("empty").shape() == Shape{0, 4});
  CHECK(metadata.at("written_by") == "safetensors");
}

TEST_CASE("a writer killed mid-save leaves a whole checkpoint, the old one or the new one") {
  TemporaryFolder folder;
  const std::string path = folder.file("big.safetensors");
  const nn::StateDict old_state{{"w", full({1 << 20}, 1.0)}},
      new_state{{"w", full({1 << 20}, 2.0)}};
  io::save_tensors(old_state, path);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    for (;;) io::save_tensors(new_state, path);  // killed from outside
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  const Tensor w = io::load_tensors(path).at("w");
  const double first = w.select(0, 0).item();
  CHECK((first == 1.0 || first == 2.0));
  CHECK(all_close(w, full({1 << 20}, first), 0, 0));
}

TEST_CASE("broken files are refused with a message that says what is wrong") {
  TemporaryFolder folder;
  const std::string good = folder.file("good.safetensors"), bad = folder.file("bad.safetensors");
  io::save_tensors({{"a", ones({2, 2})}, {"b", zeros({3}, {.dtype = DType::Int64})}}, good);
  const std::string bytes = read_bytes(good);
  std::uint64_t header_size = 0;
  std::memcpy(&header_size, bytes.data(), 8);
  const std::string header = bytes.substr(8, header_size);

  write_bytes(bad, bytes.substr(0, bytes.size() - 4));
  CHECK_ERROR(io::load_tensors(bad), "load", "bad.safetensors", "outside", "truncated");
  write_bytes(bad, bytes.substr(0, 5));
  CHECK_ERROR(io::load_tensors(bad), "load", "truncated", "5 bytes");
  std::string huge = bytes;
  huge[7] = '\x7f';  // a header length far past the end of the file
  write_bytes(bad, huge);
  CHECK_ERROR(io::load_tensors(bad), "load", "header length");
  std::string garbled = bytes;
  garbled[8] = '#';
  write_bytes(bad, garbled);
  CHECK_ERROR(io::load_tensors(bad), "load", "not valid JSON");
  std::string wrong_dtype = bytes;
  wrong_dtype.replace(wrong_dtype.find("\"F32\""), 5, "\"BF9\"");
  write_bytes(bad, wrong_dtype);
  CHECK_ERROR(io::load_tensors(bad), "load", "tensor 'a'", "BF9", "F32, F64, I64");
  std::string wrong_shape = bytes;
  wrong_shape.replace(wrong_shape.find("[2,2]"), 5, "[2,3]");
  write_bytes(bad, wrong_shape);
  CHECK_ERROR(io::load_tensors(bad), "load", "tensor 'a'", "[2, 3]", "needs 24 bytes", "span 16");
  write_bytes(bad, bytes + "extra");
  CHECK_ERROR(io::load_tensors(bad), "load", "5 bytes of data follow the last tensor");
  CHECK_ERROR(io::load_tensors(folder.file("missing.safetensors")), "load", "cannot open",
              "missing.safetensors");
  CHECK_ERROR(io::save_tensors({{"a", ones({1})}}, folder.file("no/such/folder/x.safetensors")),
              "save", "temporary file");
}

TEST_CASE("a checkpoint that does not fit the module is refused, and the module is unchanged") {
  TemporaryFolder folder;
  auto model = small_model(3);
  const nn::StateDict before = model->state_dict();
  nn::StateDict state;
  for (const auto& [name, tensor] : before) state[name] = tensor.clone();

  state.erase("0.bias");
  io::save_tensors(state, folder.file("missing.safetensors"));
  CHECK_ERROR(io::load(*model, folder.file("missing.safetensors")), "load", "missing.safetensors",
              "missing entry \"0.bias\"");

  state["0.bias"] = zeros({5});
  io::save_tensors(state, folder.file("shape.safetensors"));
  CHECK_ERROR(io::load(*model, folder.file("shape.safetensors")), "load", "0.bias", "[5]");

  state["0.bias"] = zeros({3}, {.dtype = DType::Float64});
  io::save_tensors(state, folder.file("dtype.safetensors"));
  CHECK_ERROR(io::load(*model, folder.file("dtype.safetensors")), "load", "0.bias", "float64");

  state["0.bias"] = zeros({3});
  state["extra"] = zeros({1});
  io::save_tensors(state, folder.file("extra.safetensors"));
  CHECK_ERROR(io::load(*model, folder.file("extra.safetensors")), "load",
              "unexpected entry \"extra\"");

  for (const auto& [name, tensor] : model->state_dict())
    CHECK(all_close(tensor, before.at(name), 0, 0));
}

namespace {

// A small model with dropout, trained on batches drawn from `generator`: every random number
// (data and dropout) comes from it, so its (seed, offset) is part of the training state.
struct Run {
  Generator generator{11};
  std::shared_ptr<nn::Sequential> model;
  std::unique_ptr<optim::Adam> adam;
  Run() {
    manual_seed(21);
    model = std::make_shared<nn::Sequential>();
    model->push_back(std::make_shared<nn::Linear>(6, 8));
    model->push_back(nn::make_norm("rmsnorm", 8));
    model->push_back(std::make_shared<nn::Tanh>());
    model->push_back(std::make_shared<nn::Dropout>(0.3, &generator));
    model->push_back(std::make_shared<nn::Linear>(8, 1));
    adam = std::make_unique<optim::Adam>(model->parameters(), optim::AdamOptions{.lr = 0.01});
  }
  double train_step() {
    const Tensor x = randn({16, 6}, generator);
    const Tensor y = x.sum({1}, true).tanh();
    const Tensor loss = nn::mse_loss(model->forward(x), y);
    adam->zero_grad();
    loss.backward();
    adam->step();
    return loss.item();
  }
};

}  // namespace

TEST_CASE("a resumed run continues with exactly the losses of an uninterrupted one") {
  TemporaryFolder folder;
  Run uninterrupted;
  std::vector<double> expected;
  for (int step = 0; step < 10; ++step) expected.push_back(uninterrupted.train_step());

  {
    Run first_half;
    for (int step = 0; step < 5; ++step) CHECK(first_half.train_step() == expected[step]);
    io::save_training_state(folder.file("run.safetensors"), *first_half.model, *first_half.adam,
                               first_half.generator, 5);
  }
  Run resumed;
  resumed.generator.manual_seed(999);  // different, until the state is loaded
  const std::int64_t step = io::load_training_state(
      folder.file("run.safetensors"), *resumed.model, *resumed.adam, resumed.generator);
  CHECK(step == 5);
  CHECK(resumed.adam->step_count(0) == 5);
  for (int s = 5; s < 10; ++s) CHECK(resumed.train_step() == expected[s]);  // bit for bit
}

TEST_CASE("a training state that does not fit changes neither the model nor the optimizer") {
  TemporaryFolder folder;
  Run run;
  run.train_step();
  io::save_training_state(folder.file("run.safetensors"), *run.model, *run.adam, run.generator,
                             1);
  auto state = io::load_tensors(folder.file("run.safetensors"));
  state.erase("model.4.bias");
  io::save_tensors(state, folder.file("broken.safetensors"));
  Run other;
  other.train_step();
  other.train_step();
  const auto model_before = other.model->state_dict();
  const auto optimizer_before = other.adam->state_dict();
  CHECK_ERROR(io::load_training_state(folder.file("broken.safetensors"), *other.model,
                                         *other.adam, other.generator),
              "load_training_state", "broken.safetensors", "4.bias");
  for (const auto& [name, tensor] : other.model->state_dict())
    CHECK(all_close(tensor, model_before.at(name), 0, 0));
  for (const auto& [name, tensor] : other.adam->state_dict())
    CHECK(all_close(tensor, optimizer_before.at(name), 0, 0));
  io::save_tensors({{"w", ones({1})}}, folder.file("plain.safetensors"));
  CHECK_ERROR(io::load_training_state(folder.file("plain.safetensors"), *other.model,
                                         *other.adam, other.generator),
              "load_training_state", "training state");
}

TEST_CASE(
    "optimizer state: SGD's velocity and Adam's moments round-trip, and bad state is refused") {
  Tensor w = ones({3}).requires_grad_();
  optim::SGD sgd({w}, {.lr = 0.1, .momentum = 0.9});
  (w * 2.0).sum().backward();
  sgd.step();
  const auto state = sgd.state_dict();
  REQUIRE(state.count("velocity.0") == 1);
  optim::SGD copy({w}, {.lr = 0.1, .momentum = 0.9});
  copy.load_state_dict(state);
  CHECK(all_close(copy.state_dict().at("velocity.0"), state.at("velocity.0"), 0, 0));
  CHECK_ERROR(copy.load_state_dict({{"velocity.0", ones({4})}}), "SGD", "velocity.0", "[4]");
  CHECK_ERROR(copy.load_state_dict({{"velocity.7", ones({3})}}), "SGD", "parameter 7");
  CHECK_ERROR(copy.load_state_dict({{"moment.0", ones({3})}}), "SGD", "unexpected", "moment.0");
  optim::Adam adam({w});
  CHECK_ERROR(adam.load_state_dict({}), "Adam", "steps");
}

TEST_CASE("a training state carries the loop's own metadata, and keeps its own key") {
  TemporaryFolder folder;
  Run run;
  run.train_step();
  const io::Metadata loop{{"batch_position", "3 17"}, {"best_bleu", "21.5"}};
  io::save_training_state(folder.file("run.safetensors"), *run.model, *run.adam, run.generator,
                             1, loop);
  Run resumed;
  io::Metadata restored{{"stale", "x"}};
  CHECK(io::load_training_state(folder.file("run.safetensors"), *resumed.model, *resumed.adam,
                                   resumed.generator, &restored) == 1);
  CHECK(restored == loop);
  CHECK_ERROR(io::save_training_state(folder.file("other.safetensors"), *run.model, *run.adam,
                                         run.generator, 1, {{"content", "mine"}}),
              "save_training_state", "\"content\"");
}
