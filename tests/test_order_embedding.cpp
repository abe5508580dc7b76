// examples/order_embedding: the vocabulary and caption batches, the data set reader, the model's
// initialisation and encoders, the batches of an epoch, exact resume, and the data set that
// `prepare` builds from a parallel corpus.

#include <filesystem>
#include <fstream>
#include <set>

#include "common/word_tokens.h"
#include "helpers.h"
#include "order_embedding/model.h"
#include "order_embedding/model_folder.h"
#include "order_embedding/proxy_data.h"
#include "order_embedding/run.h"
#include "order_embedding/training.h"
#include "scratch_folder.h"

using namespace normgrad;
using namespace order_embedding;
using testing::all_close;
namespace fs = std::filesystem;

namespace {

void write_lines(const std::string& path, const std::vector<std::string>& lines) {
  std::ofstream out(path);
  for (const std::string& line : lines) out << line << '\n';
}

// A data set of `images` images with k captions each, in a folder of the original layout:
// image i's features are one-hot at i % dim, its captions name it ("thing i").
void write_dataset(const std::string& folder, std::int64_t images, std::int64_t k,
                   const std::string& dev_name = "dev", std::int64_t dim = 8) {
  fs::create_directories(folder + "/images/feat");
  for (const std::string& split : {std::string("train"), dev_name, std::string("test")}) {
    std::vector<std::string> captions;
    std::vector<float> features(static_cast<std::size_t>(images * dim), 0.0f);
    for (std::int64_t i = 0; i < images; ++i) {
      features[static_cast<std::size_t>(i * dim + i % dim)] = 1.0f;
      for (std::int64_t c = 0; c < k; ++c)
        captions.push_back("thing " + std::to_string(i % dim) + (c > 0 ? " again" : ""));
    }
    write_lines(folder + "/" + split + ".txt", captions);
    data::write_npy(folder + "/images/feat/" + split + ".npy",
                    from_vector(features, {images, dim}));
  }
}

Tensor parameter_named(const nn::Module& module, const std::string& name) {
  for (const auto& [parameter_name, parameter] : module.named_parameters())
    if (parameter_name == name) return parameter;
  FAIL("no parameter " << name);
  return {};
}

std::vector<double> identity(std::int64_t n) {
  std::vector<double> values(static_cast<std::size_t>(n * n), 0.0);
  for (std::int64_t i = 0; i < n; ++i) values[static_cast<std::size_t>(i * n + i)] = 1.0;
  return values;
}

}  // namespace

TEST_CASE("Vocabulary: most frequent words first, unknown words, and batches time-first") {
  const Vocabulary vocabulary = Vocabulary::build({"a dog on a sofa", "a cat", "two  cats "});
  // a (3), then the words seen once in byte order.
  CHECK(vocabulary.words() ==
        std::vector<std::string>{"a", "cat", "cats", "dog", "on", "sofa", "two"});
  CHECK(vocabulary.size() == 9);
  CHECK(vocabulary.encode("a dog and a cat") ==
        std::vector<std::int64_t>{2, 5, kUnknownWord, 2, 3});
  const CaptionBatch batch = vocabulary.batch({"a dog", "two cats on a sofa"});
  CHECK(batch.tokens.shape() == Shape{6, 2});
  CHECK(batch.lengths.to_vector<std::int64_t>() == std::vector<std::int64_t>{3, 6});
  // Column 0: a dog <end> then padding; column 1: two cats on a sofa <end>.
  CHECK(batch.tokens.to_vector<std::int64_t>() ==
        std::vector<std::int64_t>{2, 8, 5, 4, 0, 6, 0, 2, 0, 7, 0, 0});
  CHECK_ERROR(vocabulary.batch({}), "at least one caption");

  testing::ScratchFolder folder("oe_vocabulary");
  fs::create_directories(folder.path);
  vocabulary.save(folder / "vocabulary.txt");
  CHECK(Vocabulary::load(folder / "vocabulary.txt").words() == vocabulary.words());
  write_lines(folder / "twice.txt", {"a", "b", "a"});
  CHECK_ERROR(Vocabulary::load(folder / "twice.txt"), "the word 'a' twice");
  write_lines(folder / "spaces.txt", {"a b"});
  CHECK_ERROR(Vocabulary::load(folder / "spaces.txt"), "line 1", "is not one word");
}

TEST_CASE("load_split reads the original layout: k from the lines, val for dev, errors") {
  testing::ScratchFolder folder("oe_dataset");
  write_dataset(folder / "coco", 6, 5, "val");
  const RetrievalSplit dev = load_split(folder / "coco", "dev");
  CHECK(dev.captions_per_image == 5);
  CHECK(dev.image_count() == 6);
  CHECK(dev.feature_dim() == 8);
  CHECK(dev.captions[5] == "thing 1");
  const RetrievalSplit first = load_split(folder / "coco", "train", "feat", 2);
  CHECK(first.image_count() == 2);
  CHECK(first.captions.size() == 10);
  const RetrievalSplit part = dev.slice(1, 2);
  CHECK(part.captions.front() == "thing 1");
  CHECK(part.images.select(0, 0).to_vector<double>()[1] == 1.0);

  write_lines(folder / "coco/test.txt", {"one", "two", "three", "four", "five", "six", "seven"});
  CHECK_ERROR(load_split(folder / "coco", "test"), "7 captions for the 6 images");
  CHECK_ERROR(load_split(folder / "coco", "train", "vgg"), "image features", "are missing");
  fs::create_directories(folder / "coco/images/other");
  CHECK_ERROR(load_split(folder / "coco", "train"), "2 feature sets; name one with --features");
  CHECK_ERROR(load_split(folder / "none", "train"), "has no images/ folder");
}

TEST_CASE("the model: orthogonal recurrent blocks, embeddings on the unit sphere's orthant") {
  const ModelConfig config{
      .norm = "rmsnorm", .vocabulary = 12, .word_dim = 5, .dim = 6, .image_dim = 8, .seed = 3};
  OrderEmbeddingModel model(config);
  const Tensor state_weight = parameter_named(model, "encoder.forward.weight_hh");
  for (std::int64_t block = 0; block < 3; ++block) {
    const Tensor u = state_weight.narrow(0, block * 6, 6);
    CHECK(all_close(matmul(u, u.t()), identity(6), 1e-5, 1e-5));
  }
  const Tensor input_weight = parameter_named(model, "encoder.forward.weight_ih");
  CHECK(input_weight.abs().max().item() <= 0.1);
  const Vocabulary vocabulary = Vocabulary::build({"a b c", "d e f g"});
  const Tensor s = model.encode_captions(vocabulary.batch({"a b", "g f e d", "c"}));
  Generator generator(1);
  const Tensor v = model.encode_images(rand({4, 8}, generator));
  for (const Tensor& e : {s, v}) {
    CHECK(min(e).item() >= 0.0);
    CHECK(all_close(sum(square(e), {1}), std::vector<double>(e.size(0), 1.0), 1e-5, 1e-5));
  }
  CHECK(model.loss(vocabulary.batch({"a b", "c", "d e", "f g"}), rand({4, 8}, generator)).item() >=
        0.0);
  CHECK_ERROR(model.encode_images(zeros({2, 7})), "image features must be [B, 8]");
  CHECK_ERROR(parse_model_norm("batchnorm"), "the caption GRU takes");
  CHECK_GRADIENTS([](const std::vector<Tensor>& in) { return unit_orthant(in[0]); },
                  {testing::leaf({3, 4}, 7)});
}

TEST_CASE("batch_indices: each epoch a permutation of the images, from the seed and epoch") {
  const TrainSettings settings{.batch_size = 4, .seed = 5};
  // 10 images of 3 captions: 2 batches an epoch, the last 2 images of each order left out.
  std::set<std::int64_t> seen;
  for (std::int64_t step = 0; step < 2; ++step) {
    const BatchIndices batch = batch_indices(settings, step, 10, 3);
    CHECK(batch.images.size() == 4);
    for (std::size_t b = 0; b < 4; ++b) {
      CHECK(batch.captions[b] / 3 == batch.images[b]);
      CHECK(seen.insert(batch.images[b]).second);
    }
  }
  CHECK(batch_indices(settings, 1, 10, 3).images == batch_indices(settings, 1, 10, 3).images);
  CHECK(batch_indices(settings, 2, 10, 3).images != batch_indices(settings, 0, 10, 3).images);
  CHECK_ERROR(batch_indices(settings, 0, 3, 1), "need at least 4 training images");
}

TEST_CASE("Trainer: a resumed run ends exactly as an uninterrupted one, history and weights") {
  testing::ScratchFolder folder("oe_resume");
  write_dataset(folder / "data", 16, 2);
  const RunConfig run{
      .model = {.norm = "layernorm", .word_dim = 4, .dim = 6, .seed = 2},
      .data = {.folder = folder / "data", .features = "", .train_images = 0, .dev_images = 8},
      .training = {.steps = 6, .batch_size = 4, .valid_every = 3, .seed = 4}};
  std::FILE* log = std::tmpfile();  // the runs' lines, not the test's output
  const std::vector<ValidationRecord> whole =
      train_in_folder(ModelFolder(folder / "whole"), run, Device::cpu(), false, log);
  REQUIRE(whole.size() == 2);
  CHECK(whole[1].step == 6);

  // The same run stopped after its first validation, then continued by a second call.
  RunConfig first_half = run;
  {
    const ModelFolder half(folder / "half");
    const RunData data = load_run_data(half, run.data);
    first_half.model.vocabulary = data.vocabulary.size();
    first_half.model.image_dim = data.train.feature_dim();
    Trainer trainer(first_half.model, run.training, data.train, data.dev, data.vocabulary,
                    Device::cpu());
    for (int step = 0; step < 3; ++step) trainer.train_step();  // to the first validation
    trainer.validate();
    half.write_config(first_half);
    data.vocabulary.save(half.file("vocabulary.txt"));
    trainer.save_state(half.file("state.safetensors"));
  }
  const std::vector<ValidationRecord> resumed =
      train_in_folder(ModelFolder(folder / "half"), first_half, Device::cpu(), false, log);
  std::fclose(log);
  REQUIRE(resumed.size() == 2);
  CHECK(resumed[1].train_loss == whole[1].train_loss);
  CHECK(data::image_recall_sum(resumed[1].dev) == data::image_recall_sum(whole[1].dev));
  const auto a = io::load_tensors(folder / "whole/state.safetensors");
  const auto b = io::load_tensors(folder / "half/state.safetensors");
  for (const auto& [name, tensor] : a)
    if (name.find("encoder") != std::string::npos) CHECK(all_close(tensor, b.at(name), 0, 0));

  // The history's CSV form reads back, and a damaged one is refused.
  const std::string csv = history_csv(whole);
  const std::vector<ValidationRecord> back = parse_history_csv(csv);
  REQUIRE(back.size() == 2);
  CHECK(back[1].dev.caption.mean_rank == whole[1].dev.caption.mean_rank);
  CHECK_ERROR(parse_history_csv(csv + "7,1,2\n"), "line 4 of the training history is damaged");
  CHECK_ERROR(parse_history_csv("epoch,loss\n"), "does not start with its header");
}

TEST_CASE("prepare: tokens, fixed features and a split without repeats") {
  CHECK(examples::word_tokens("Can't open %s.") ==
        std::vector<std::string>{"can", "'", "t", "open", "%", "s", "."});
  CHECK(examples::word_tokens("„Größe“ ÄNDERN") ==
        std::vector<std::string>{"„", "größe", "“", "ändern"});

  const std::vector<std::vector<std::string>> training{{"die", "datei"}, {"die", "größe"}};
  const HashedFeatures features(training, 64);
  CHECK(features.idf("die") < features.idf("datei"));
  CHECK(features.idf("unseen") > features.idf("datei"));
  const Tensor encoded = features.encode({{"die", "datei"}, {"die", "datei"}, {}, {"größe"}});
  CHECK(encoded.shape() == Shape{4, 64});
  CHECK(min(encoded).item() >= 0.0);
  CHECK(all_close(sum(square(encoded), {1}), {1.0, 1.0, 0.0, 1.0}, 1e-6, 1e-6));
  CHECK(all_close(encoded.select(0, 0), encoded.select(0, 1), 0, 0));

  testing::ScratchFolder folder("oe_prepare");
  fs::create_directories(folder / "corpus");
  std::vector<std::string> english, german;
  for (int i = 0; i < 40; ++i) {
    english.push_back("open the file number " + std::to_string(i));
    german.push_back("öffne die datei nummer " + std::to_string(i));
  }
  english.push_back("open the file number 3");  // a repeat of an English segment
  german.push_back("etwas anderes");
  english.push_back("too short");
  german.push_back("zu kurz");
  for (const char* split : {"train", "dev", "test"}) {
    write_lines(folder / ("corpus/" + std::string(split) + ".en"),
                std::string(split) == "train" ? english : std::vector<std::string>{});
    write_lines(folder / ("corpus/" + std::string(split) + ".de"),
                std::string(split) == "train" ? german : std::vector<std::string>{});
  }
  const ProxySettings settings{.corpus = folder / "corpus",
                               .out = folder / "data",
                               .feature_dim = 32,
                               .train_pairs = 100,
                               .dev_pairs = 5,
                               .test_pairs = 10};
  const ProxySummary summary = build_proxy_data(settings);
  CHECK(summary.segments == 42);
  CHECK(summary.kept == 40);
  CHECK(summary.train == 25);
  CHECK(summary.dev == 5);
  CHECK(summary.test == 10);
  const RetrievalSplit test = load_split(folder / "data", "test");
  CHECK(test.image_count() == 10);
  CHECK(test.feature_dim() == 32);
  CHECK(test.captions_per_image == 1);
  // No caption in two splits.
  std::set<std::string> all;
  for (const char* split : {"train", "dev", "test"})
    for (const std::string& caption : load_split(folder / "data", split).captions)
      CHECK(all.insert(caption).second);

  ProxySettings too_many = settings;
  too_many.test_pairs = 40;
  CHECK_ERROR(build_proxy_data(too_many), "40 usable pairs", "fewer than the 40 test");
  ProxySettings missing = settings;
  missing.corpus = folder / "nowhere";
  CHECK_ERROR(build_proxy_data(missing), "lacks train.en or train.de");
}

TEST_CASE("order_embedding's config.json goes out and back, and damage is named") {
  RunConfig run{
      .model = {.norm = "prmsnorm:0.125", .vocabulary = 50, .word_dim = 7, .dim = 9},
      .data = {.folder = "/data/coco", .features = "10crop", .train_images = 10, .dev_images = 5},
      .training = {.steps = 12, .learning_rate = 2e-3, .clip = 0, .valid_every = 4}};
  const nlohmann::json json = to_json(run);
  CHECK(to_json(run_config_from_json(json)) == json);
  nlohmann::json missing = json;
  missing["training"].erase("margin");
  CHECK_ERROR(run_config_from_json(missing), "order_embedding",
              "config.json has no "
              "training.margin");
  nlohmann::json wrong = json;
  wrong["model"]["dim"] = "wide";
  CHECK_ERROR(run_config_from_json(wrong), "model.dim of the wrong type: \"wide\"");
  nlohmann::json bad_norm = json;
  bad_norm["model"]["norm"] = "batchnorm";
  CHECK_ERROR(run_config_from_json(bad_norm), "the caption GRU takes");
  testing::ScratchFolder folder("oe_config");
  const ModelFolder model_folder(folder.path.string());
  CHECK_FALSE(model_folder.has_config());
  CHECK_ERROR(model_folder.read_config(),
              "is not a model folder of order_embedding: no config.json");
  model_folder.write_config(run);
  CHECK(to_json(model_folder.read_config()) == json);
}
