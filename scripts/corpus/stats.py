"""Summary figures of a corpus: how much text, how long the segments, what kind."""

import re
import statistics

_SENTENCE_END = re.compile(r"[.!?\u2026][\"'\u201c\u201d)]?$")
_WORD = re.compile(r"\w+")
LABEL_MAX_TOKENS = 3
LONG_MIN_TOKENS = 5


def kind(english):
    """'label' (at most 3 tokens), 'sentence' (more than 3 tokens and final punctuation)
    or 'phrase' (anything else)."""
    if len(english.split()) <= LABEL_MAX_TOKENS:
        return "label"
    return "sentence" if _SENTENCE_END.search(english) else "phrase"


def word_types(texts):
    """Distinct lowercased words (runs of letters, digits, '_'): the vocabulary a word-level
    model would need; German's compounds make its count about twice the English one."""
    return len({word for text in texts for word in _WORD.findall(text.lower())})


def summarize(pairs):
    """A dict of figures, all deterministic, for the manifest and the console."""
    if not pairs:
        return {"segments": 0}
    en_lengths = [len(en.split()) for en, _ in pairs]
    de_lengths = [len(de.split()) for _, de in pairs]
    kinds = {"label": 0, "phrase": 0, "sentence": 0}
    for en, _ in pairs:
        kinds[kind(en)] += 1
    with_placeholder = sum(1 for en, _ in pairs if "%s" in en or "%d" in en)
    n = len(pairs)
    return {
        "segments": n,
        "tokens_en": sum(en_lengths),
        "tokens_de": sum(de_lengths),
        "mean_tokens_en": round(sum(en_lengths) / n, 2),
        "mean_tokens_de": round(sum(de_lengths) / n, 2),
        "median_tokens_en": statistics.median_low(en_lengths),
        "median_tokens_de": statistics.median_low(de_lengths),
        "word_types_en": word_types(en for en, _ in pairs),
        "word_types_de": word_types(de for _, de in pairs),
        "share_labels": round(kinds["label"] / n, 4),
        "share_phrases": round(kinds["phrase"] / n, 4),
        "share_sentences": round(kinds["sentence"] / n, 4),
        "share_with_placeholder": round(with_placeholder / n, 4),
        f"share_at_least_{LONG_MIN_TOKENS}_tokens": round(
            sum(1 for length in en_lengths if length >= LONG_MIN_TOKENS) / n, 4),
    }


def format_summary(figures):
    if not figures.get("segments"):
        return "empty corpus"
    f = figures
    return "\n".join([
        f"  tokens: {f['tokens_en']:,} English, {f['tokens_de']:,} German "
        f"({f['word_types_en']:,} / {f['word_types_de']:,} lowercased word types)",
        f"  tokens per segment: mean {f['mean_tokens_en']} / {f['mean_tokens_de']}, "
        f"median {f['median_tokens_en']} / {f['median_tokens_de']}",
        f"  labels (<= {LABEL_MAX_TOKENS} tokens) {f['share_labels']:.1%}, phrases "
        f"{f['share_phrases']:.1%}, sentences {f['share_sentences']:.1%}",
        f"  with %s or %d: {f['share_with_placeholder']:.1%}; "
        f">= {LONG_MIN_TOKENS} tokens: {f[f'share_at_least_{LONG_MIN_TOKENS}_tokens']:.1%}",
    ])
