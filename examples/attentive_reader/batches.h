#pragma once
// Questions as the tensors the reader takes: documents and queries time first, padded with 0,
// with their lengths, and the answers' ids. Training batches renumber the entities: one random
// permutation of the entity numbers per batch, applied to documents, queries and answers alike,
// as the attentive reader's code does, so that no entity number carries meaning of its own.

#include <normgrad/normgrad.h>

#include <cstdint>
#include <vector>

#include "question_file.h"
#include "vocabulary.h"

namespace attentive_reader {

struct QuestionBatch {
  normgrad::Tensor document, document_lengths;  // int64 [Td, B] and [B]
  normgrad::Tensor query, query_lengths;        // int64 [Tq, B] and [B]
  normgrad::Tensor answers;                     // int64 [B]
  // float [B, V]: 1 for the ids of each document's entities, 0 elsewhere; undefined unless
  // asked for (a reader that answers among the document's entities needs it).
  normgrad::Tensor candidates;
  QuestionBatch to(normgrad::Device device) const;
};

// Questions `indices` encoded; `permutation`, when not empty, maps entity number k to
// permutation[k] (a permutation of 0 .. E-1); `candidates` adds the candidates mask.
QuestionBatch make_batch(const std::vector<Question>& questions,
                         const std::vector<std::int64_t>& indices,
                         const ReaderVocabulary& vocabulary,
                         const std::vector<std::int64_t>& permutation = {},
                         bool candidates = false);

// A permutation of 0 .. count-1 from a seed (Fisher-Yates on mt19937_64: the same everywhere).
std::vector<std::int64_t> random_permutation(std::int64_t count, std::uint64_t seed);

}  // namespace attentive_reader
