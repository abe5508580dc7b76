#pragma once
// Subword units through sentencepiece (Kudo and Richardson, 2018): a joint BPE vocabulary
// learnt from the source and target training text, so that rare words and German compounds
// become sequences of known pieces ("Zonenkapazitäten" -> "▁Zonen", "kapaz", "itäten").
//
//   auto tokenizer = text::SubwordTokenizer::train({"train.en", "train.de"}, {.vocabulary_size =
//   8000}); std::vector<std::int32_t> ids = tokenizer.encode("Open the file"); std::string text =
//   tokenizer.decode(ids);       // "Open the file" tokenizer.save("model/tokenizer.model");
//
// Every model trained here has the same ids for its four special tokens (below), so batches
// can be padded and decoders started without asking the tokenizer. The model travels with a
// checkpoint as bytes (serialized()), and its fingerprint tells whether a checkpoint and a
// tokenizer belong together.

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace normgrad::text {

inline constexpr std::int32_t pad_id = 0;
inline constexpr std::int32_t unk_id = 1;
inline constexpr std::int32_t bos_id = 2;  // begin of sentence
inline constexpr std::int32_t eos_id = 3;  // end of sentence

// The checkpoint metadata key (io::Metadata) under which a model records the fingerprint of
// the tokenizer it was trained with.
inline constexpr const char* tokenizer_metadata_key = "normgrad.tokenizer_fingerprint";

struct SubwordTrainingOptions {
  std::int32_t vocabulary_size = 8000;  // 32000 at the paper's scale
  std::string model_type = "bpe";       // or "unigram"
  // Characters covered by the vocabulary; 1.0 keeps every character of the training text, so
  // nothing seen in training becomes unknown.
  double character_coverage = 1.0;
  // sentencepiece's normalisation: "nmt_nfkc" (its default, as Marian and fairseq use it) or
  // "identity" (the text exactly as written).
  std::string normalization = "nmt_nfkc";
  // Pieces longer than this many characters are not learnt.
  std::int32_t max_piece_length = 16;
};

class SubwordTokenizer {
 public:
  // Learns a vocabulary from the lines of `files` together (a joint vocabulary). A missing
  // file, invalid UTF-8 (named by file and line), or a vocabulary size the text cannot fill is
  // an Error before or instead of training. The same files and options give the same model.
  static SubwordTokenizer train(const std::vector<std::string>& files,
                                const SubwordTrainingOptions& options = {});
  // A model saved by save() (a sentencepiece .model file).
  static SubwordTokenizer load(const std::string& path);
  // A model from its bytes; `origin` names it in errors (a checkpoint's path, say).
  static SubwordTokenizer from_serialized(std::string bytes, std::string_view origin);

  SubwordTokenizer(SubwordTokenizer&&) noexcept;
  SubwordTokenizer& operator=(SubwordTokenizer&&) noexcept;
  ~SubwordTokenizer();

  // Written atomically: the file holds the old model or the new one, never a mix.
  void save(const std::string& path) const;

  // Piece ids of a UTF-8 text, without bos or eos. Invalid UTF-8 is an Error.
  std::vector<std::int32_t> encode(std::string_view text) const;
  // The text of piece ids; pad, bos and eos are skipped, unk becomes " ⁇ ". An id outside the
  // vocabulary is an Error.
  std::string decode(std::span<const std::int32_t> ids) const;
  // The pieces themselves, for looking at ("▁Open", "▁the", "▁file").
  std::vector<std::string> pieces(std::string_view text) const;
  std::string piece(std::int32_t id) const;

  std::int32_t vocabulary_size() const;
  const std::string& serialized() const { return serialized_; }
  // XXH64 of the serialized model, as 16 hex digits.
  const std::string& fingerprint() const { return fingerprint_; }

  // An Error unless this tokenizer's fingerprint is `expected`; `what` names the other side
  // ("checkpoint model/weights.safetensors").
  void check_fingerprint(std::string_view expected, std::string_view what) const;
  // The same against a checkpoint's metadata (io::load_tensors fills it): an Error naming
  // `checkpoint` when it records no tokenizer or another one.
  void check_checkpoint(const std::map<std::string, std::string>& metadata,
                        std::string_view checkpoint) const;

 private:
  struct Processor;
  SubwordTokenizer(std::unique_ptr<Processor> processor, std::string serialized);

  std::unique_ptr<Processor> processor_;
  std::string serialized_;
  std::string fingerprint_;
};

}  // namespace normgrad::text
