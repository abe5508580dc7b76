#include "text/subword_tokenizer.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstdio>
#include <sstream>
#include <unordered_map>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "base/error.h"
#include "text/text_file.h"
#include "text/unicode_text.h"
#include "io/atomic_file.h"

namespace normgrad::text {

struct SubwordTokenizer::Processor {
  sentencepiece::SentencePieceProcessor spm;
};

namespace {

// Feeds sentencepiece's trainer the lines already read (and checked) here, so that invalid
// text is reported by file and line before training starts.
class LineIterator final : public sentencepiece::SentenceIterator {
 public:
  explicit LineIterator(const std::vector<std::vector<std::string>>& files) : files_(files) {
    skip_empty_files();
  }
  bool done() const override { return file_ >= files_.size(); }
  void Next() override {
    ++line_;
    skip_empty_files();
  }
  const std::string& value() const override { return files_[file_][line_]; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  void skip_empty_files() {
    while (file_ < files_.size() && line_ >= files_[file_].size()) {
      ++file_;
      line_ = 0;
    }
  }
  const std::vector<std::vector<std::string>>& files_;
  std::size_t file_ = 0;
  std::size_t line_ = 0;
};

std::string hex64(std::uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

std::string joined(const std::vector<std::string>& files) {
  std::string out;
  for (const auto& file : files) out += (out.empty() ? "" : ", ") + file;
  return out;
}

void check_training_options(const SubwordTrainingOptions& options) {
  if (options.vocabulary_size < 8) {
    throw Error(
        detail::concat("SubwordTokenizer::train: vocabulary_size must be at least 8 (4 special "
                       "tokens and some pieces), got ",
                       options.vocabulary_size));
  }
  if (options.model_type != "bpe" && options.model_type != "unigram") {
    throw Error(detail::concat("SubwordTokenizer::train: model_type must be bpe or unigram, got '",
                               options.model_type, "'"));
  }
  if (!(options.character_coverage > 0.0 && options.character_coverage <= 1.0)) {
    throw Error(
        detail::concat("SubwordTokenizer::train: character_coverage must be in (0, 1], got ",
                       options.character_coverage));
  }
  if (options.normalization != "nmt_nfkc" && options.normalization != "identity" &&
      options.normalization != "nfkc") {
    throw Error(detail::concat(
        "SubwordTokenizer::train: normalization must be nmt_nfkc, nfkc or identity, got '",
        options.normalization, "'"));
  }
  if (options.max_piece_length < 1) {
    throw Error(detail::concat("SubwordTokenizer::train: max_piece_length must be >= 1, got ",
                               options.max_piece_length));
  }
}

}  // namespace

SubwordTokenizer::SubwordTokenizer(std::unique_ptr<Processor> processor, std::string serialized)
    : processor_(std::move(processor)),
      serialized_(std::move(serialized)),
      fingerprint_(hex64(XXH64(serialized_.data(), serialized_.size(), 0))) {}

SubwordTokenizer::SubwordTokenizer(SubwordTokenizer&&) noexcept = default;
SubwordTokenizer& SubwordTokenizer::operator=(SubwordTokenizer&&) noexcept = default;
SubwordTokenizer::~SubwordTokenizer() = default;

SubwordTokenizer SubwordTokenizer::train(const std::vector<std::string>& files,
                                         const SubwordTrainingOptions& options) {
  check_training_options(options);
  if (files.empty()) throw Error("SubwordTokenizer::train: no training files given");
  std::vector<std::vector<std::string>> lines;
  std::size_t line_count = 0;
  for (const auto& file : files) {
    lines.push_back(read_text_lines(file));
    line_count += lines.back().size();
  }
  if (line_count == 0)
    throw Error(detail::concat("SubwordTokenizer::train: no text in ", joined(files)));

  const std::unordered_map<std::string, std::string> arguments{
      {"model_type", options.model_type},
      {"vocab_size", std::to_string(options.vocabulary_size)},
      {"character_coverage", std::to_string(options.character_coverage)},
      {"normalization_rule_name", options.normalization},
      {"max_sentencepiece_length", std::to_string(options.max_piece_length)},
      // One thread: sentencepiece records the thread count in the model it writes, so two would
      // give other bytes (and another fingerprint) for the same pieces. Its BPE training hardly
      // uses a second thread anyway (18.5 s against 17.4 s for the 152k-pair demo corpus).
      {"num_threads", "1"},
      {"pad_id", std::to_string(pad_id)},
      {"unk_id", std::to_string(unk_id)},
      {"bos_id", std::to_string(bos_id)},
      {"eos_id", std::to_string(eos_id)},
      // Every line, in the order given: no sampling, so the same text gives the same model.
      {"input_sentence_size", "0"},
      {"shuffle_input_sentence", "false"},
      // Long lines are kept (the default would drop lines over 4192 bytes).
      {"max_sentence_length", "1000000"},
      {"minloglevel", "2"},
  };
  LineIterator iterator(lines);
  std::string serialized;
  const auto status = sentencepiece::SentencePieceTrainer::Train(arguments, &iterator, &serialized);
  if (!status.ok()) {
    throw Error(detail::concat("SubwordTokenizer::train on ", joined(files), " (", line_count,
                               " lines, vocabulary_size ", options.vocabulary_size,
                               "): ", status.message()));
  }
  return from_serialized(std::move(serialized), "the model just trained");
}

SubwordTokenizer SubwordTokenizer::from_serialized(std::string bytes, std::string_view origin) {
  auto processor = std::make_unique<Processor>();
  const auto status = processor->spm.LoadFromSerializedProto(bytes);
  if (!status.ok()) {
    throw Error(detail::concat("SubwordTokenizer: ", origin,
                               " is not a sentencepiece model: ", status.message()));
  }
  const auto& spm = processor->spm;
  if (spm.pad_id() != pad_id || spm.unk_id() != unk_id || spm.bos_id() != bos_id ||
      spm.eos_id() != eos_id) {
    throw Error(detail::concat("SubwordTokenizer: ", origin, " has special ids pad ", spm.pad_id(),
                               ", unk ", spm.unk_id(), ", bos ", spm.bos_id(), ", eos ",
                               spm.eos_id(), "; expected ", pad_id, ", ", unk_id, ", ", bos_id,
                               ", ", eos_id));
  }
  return SubwordTokenizer(std::move(processor), std::move(bytes));
}

SubwordTokenizer SubwordTokenizer::load(const std::string& path) {
  return from_serialized(read_file_bytes(path, "SubwordTokenizer::load"), path);
}

void SubwordTokenizer::save(const std::string& path) const {
  io::write_atomically(path, "SubwordTokenizer::save", [&](const io::FileWriter& out) {
    out.write(serialized_.data(), serialized_.size());
  });
}

std::vector<std::int32_t> SubwordTokenizer::encode(std::string_view text) const {
  decode_utf8(text, "SubwordTokenizer::encode");  // sentencepiece would replace bad bytes silently
  std::vector<int> ids;
  const auto status = processor_->spm.Encode(text, &ids);
  if (!status.ok()) throw Error(detail::concat("SubwordTokenizer::encode: ", status.message()));
  return std::vector<std::int32_t>(ids.begin(), ids.end());
}

std::string SubwordTokenizer::decode(std::span<const std::int32_t> ids) const {
  std::vector<int> kept;
  kept.reserve(ids.size());
  for (std::int32_t id : ids) {
    if (id < 0 || id >= vocabulary_size()) {
      throw Error(detail::concat("SubwordTokenizer::decode: id ", id,
                                 " is outside the vocabulary [0, ", vocabulary_size(), ")"));
    }
    if (id != pad_id && id != bos_id && id != eos_id) kept.push_back(id);
  }
  std::string text;
  const auto status = processor_->spm.Decode(kept, &text);
  if (!status.ok()) throw Error(detail::concat("SubwordTokenizer::decode: ", status.message()));
  return text;
}

std::vector<std::string> SubwordTokenizer::pieces(std::string_view text) const {
  decode_utf8(text, "SubwordTokenizer::pieces");
  std::vector<std::string> out;
  const auto status = processor_->spm.Encode(text, &out);
  if (!status.ok()) throw Error(detail::concat("SubwordTokenizer::pieces: ", status.message()));
  return out;
}

std::string SubwordTokenizer::piece(std::int32_t id) const {
  if (id < 0 || id >= vocabulary_size()) {
    throw Error(detail::concat("SubwordTokenizer::piece: id ", id,
                               " is outside the vocabulary [0, ", vocabulary_size(), ")"));
  }
  return processor_->spm.IdToPiece(id);
}

std::int32_t SubwordTokenizer::vocabulary_size() const { return processor_->spm.GetPieceSize(); }

void SubwordTokenizer::check_fingerprint(std::string_view expected, std::string_view what) const {
  if (expected != fingerprint_) {
    throw Error(detail::concat("SubwordTokenizer: the tokenizer (fingerprint ", fingerprint_,
                               ") is not the one ", what, " was trained with (fingerprint ",
                               expected, ")"));
  }
}

}  // namespace normgrad::text

namespace normgrad::text {

void SubwordTokenizer::check_checkpoint(const std::map<std::string, std::string>& metadata,
                                        std::string_view checkpoint) const {
  const auto found = metadata.find(tokenizer_metadata_key);
  if (found == metadata.end()) {
    throw Error(detail::concat("SubwordTokenizer: checkpoint ", checkpoint,
                               " records no tokenizer (no ", tokenizer_metadata_key,
                               " in its metadata)"));
  }
  check_fingerprint(found->second, detail::concat("checkpoint ", checkpoint));
}

}  // namespace normgrad::text
