#pragma once
// normgrad's text toolkit, the second library (CMake target normgrad::text): parallel text,
// sentencepiece subword units, translation batches, BLEU and chrF as sacreBLEU computes them,
// the paired bootstrap, and beam search. #include <normgrad/text.h> brings in its public API
// and the core's.

#include "decoding/beam_search.h"
#include "decoding/length_penalty.h"
#include "decoding/step_decoder.h"
#include "decoding/top_tokens.h"
#include "normgrad.h"
#include "text/bleu.h"
#include "text/bleu_tokenizer.h"
#include "text/chrf.h"
#include "text/corpus_metric.h"
#include "text/paired_bootstrap.h"
#include "text/parallel_dataset.h"
#include "text/subword_tokenizer.h"
#include "text/text_file.h"
#include "text/translation_batches.h"
#include "text/unicode_text.h"
