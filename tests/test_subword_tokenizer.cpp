// SubwordTokenizer: training a joint BPE model with sentencepiece, encoding and decoding with
// the fixed special ids, saving and loading, fingerprints, and refusals of bad input.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "text/subword_tokenizer.h"
#include "helpers.h"
#include "io/checkpoint.h"
#include "parallel_text_fixture.h"

using namespace normgrad;

TEST_CASE("SubwordTokenizer trains a joint BPE model whose special ids are fixed") {
  const auto corpus = testing::small_parallel_corpus("subword_train");
  const auto tokenizer =
      text::SubwordTokenizer::train({corpus.source, corpus.target}, {.vocabulary_size = 300});
  CHECK(tokenizer.vocabulary_size() == 300);
  CHECK(tokenizer.piece(text::pad_id) == "<pad>");
  CHECK(tokenizer.piece(text::unk_id) == "<unk>");
  CHECK(tokenizer.piece(text::bos_id) == "<s>");
  CHECK(tokenizer.piece(text::eos_id) == "</s>");

  // Text of both languages round-trips, and frequent words are single pieces.
  for (const std::string text :
       {"the file could not be opened", "die Datei konnte nicht geöffnet werden",
        "Öffnen Sie die Datei „%s“ nicht"}) {
    const auto ids = tokenizer.encode(text);
    CHECK_FALSE(ids.empty());
    for (auto id : ids) CHECK((id > text::eos_id && id < 300));
    CHECK(tokenizer.decode(ids) == text);
  }
  CHECK(tokenizer.pieces("the file") == std::vector<std::string>{"▁the", "▁file"});

  // decode skips padding and the sentence marks.
  auto ids = tokenizer.encode("the file");
  ids.insert(ids.begin(), text::bos_id);
  ids.push_back(text::eos_id);
  ids.push_back(text::pad_id);
  CHECK(tokenizer.decode(ids) == "the file");
  // A character never seen in training is unknown.
  CHECK(tokenizer.encode("☃").back() == text::unk_id);
}

TEST_CASE(
    "SubwordTokenizer: the same text and options give the same model, saved and loaded whole") {
  const auto corpus = testing::small_parallel_corpus("subword_same");
  const text::SubwordTrainingOptions options{.vocabulary_size = 250};
  const auto first = text::SubwordTokenizer::train({corpus.source, corpus.target}, options);
  const auto second = text::SubwordTokenizer::train({corpus.source, corpus.target}, options);
  CHECK(first.serialized() == second.serialized());
  CHECK(first.fingerprint() == second.fingerprint());
  CHECK(first.fingerprint().size() == 16);

  const auto other =
      text::SubwordTokenizer::train({corpus.source, corpus.target}, {.vocabulary_size = 260});
  CHECK(other.fingerprint() != first.fingerprint());

  const auto path =
      (std::filesystem::temp_directory_path() / "normgrad_test_tokenizer.model").string();
  first.save(path);
  const auto loaded = text::SubwordTokenizer::load(path);
  CHECK(loaded.fingerprint() == first.fingerprint());
  CHECK(loaded.encode("die Datei wurde gespeichert") ==
        first.encode("die Datei wurde gespeichert"));
  CHECK_NOTHROW(loaded.check_fingerprint(first.fingerprint(), "checkpoint a"));
  CHECK_ERROR(loaded.check_fingerprint(other.fingerprint(), "checkpoint model/weights.safetensors"),
              "not the one checkpoint model/weights.safetensors was trained with",
              other.fingerprint().c_str());
  std::filesystem::remove(path);
}

TEST_CASE("SubwordTokenizer refuses bad files, options, models and ids") {
  const auto corpus = testing::small_parallel_corpus("subword_bad");
  CHECK_ERROR(text::SubwordTokenizer::train({corpus.source, "/nonexistent/train.de"}),
              "/nonexistent/train.de");
  CHECK_ERROR(text::SubwordTokenizer::train({}), "no training files");
  CHECK_ERROR(text::SubwordTokenizer::train({corpus.source}, {.vocabulary_size = 4}),
              "vocabulary_size must be at least 8");
  CHECK_ERROR(text::SubwordTokenizer::train({corpus.source}, {.model_type = "wordpiece"}),
              "bpe or unigram");
  CHECK_ERROR(text::SubwordTokenizer::train({corpus.source}, {.character_coverage = 0}),
              "character_coverage");
  // More pieces than the text has to offer.
  CHECK_ERROR(text::SubwordTokenizer::train({corpus.source}, {.vocabulary_size = 8000}),
              corpus.source.c_str(), "vocabulary_size 8000");

  const auto invalid =
      (std::filesystem::temp_directory_path() / "normgrad_test_invalid_utf8.txt").string();
  std::ofstream(invalid, std::ios::binary) << "fine\nfine too\nnot \xFF fine\n";
  CHECK_ERROR(text::SubwordTokenizer::train({invalid}), "normgrad_test_invalid_utf8.txt line 3",
              "invalid UTF-8");

  const auto not_a_model =
      (std::filesystem::temp_directory_path() / "normgrad_test_not_a_model").string();
  std::ofstream(not_a_model, std::ios::binary) << "this is not a model";
  CHECK_ERROR(text::SubwordTokenizer::load(not_a_model), "normgrad_test_not_a_model",
              "not a sentencepiece model");
  CHECK_ERROR(text::SubwordTokenizer::load("/nonexistent/tokenizer.model"),
              "cannot open /nonexistent/tokenizer.model");

  const auto tokenizer =
      text::SubwordTokenizer::train({corpus.source, corpus.target}, {.vocabulary_size = 200});
  const std::vector<std::int32_t> bad{5, 200};
  CHECK_ERROR(tokenizer.decode(bad), "id 200 is outside the vocabulary [0, 200)");
  CHECK_ERROR(tokenizer.encode("bad \xC3"), "invalid UTF-8");
  std::filesystem::remove(invalid);
  std::filesystem::remove(not_a_model);
}

TEST_CASE("a checkpoint records its tokenizer, and another tokenizer is refused") {
  const auto corpus = testing::small_parallel_corpus("subword_checkpoint");
  const auto tokenizer =
      text::SubwordTokenizer::train({corpus.source, corpus.target}, {.vocabulary_size = 220});
  const auto other =
      text::SubwordTokenizer::train({corpus.source, corpus.target}, {.vocabulary_size = 230});
  const auto path =
      (std::filesystem::temp_directory_path() / "normgrad_test_tokenizer_checkpoint.safetensors")
          .string();
  io::save_tensors({{"embedding", zeros({4, 2})}}, path,
                   {{text::tokenizer_metadata_key, tokenizer.fingerprint()}});
  io::Metadata metadata;
  io::load_tensors(path, &metadata);
  CHECK_NOTHROW(tokenizer.check_checkpoint(metadata, path));
  CHECK_ERROR(other.check_checkpoint(metadata, path), "is not the one checkpoint", path.c_str(),
              tokenizer.fingerprint().c_str(), other.fingerprint().c_str());
  io::save_tensors({{"embedding", zeros({4, 2})}}, path);
  io::load_tensors(path, &metadata);
  CHECK_ERROR(tokenizer.check_checkpoint(metadata, path), "records no tokenizer", path.c_str());
  std::filesystem::remove(path);
}
