"""The paper's claims, each set beside what one scripts/reproduce run measured, in words that
say how strongly the numbers support it. Nothing here decides more than the numbers do: a
difference inside its noise is called that, and a run too short to learn says so.

Every finding reads the CSV files the example programs write:
  gru_nmt/table2.csv, transformer_nmt/table4.csv and pre_norm.csv   one row per run: test BLEU,
      its bootstrap interval, the paired-bootstrap p-value against LayerNorm, seconds per 1000
      steps with half the distance between the quartiles, whether the run learned
  convpool_cnn_c/table10.csv   one row per norm: test error, test images, seconds per epoch and
      the range of the epochs' times over their median
  mnist_mlp/summary.csv        one row per run: norm, batch size, ms per step, test accuracy
  norm_invariance/table1.csv   one row per cell: measured and the paper's
  order_embedding/table7.csv   one row per norm: test retrieval R@K and mean rank both ways, the
      test images and captions, seconds per 100 steps and their spread, other processes' CPU
  order_embedding/table8_paper_sizes.csv, attentive_reader/table6_paper_sizes.csv   one row
      per norm: seconds per 100 steps at the paper's sizes and the range of the steps over
      their median (the speed findings' source when present, as the paper's Tables 6 and 8 are
      at those sizes)
  attentive_reader/table6.csv  one row per norm: test error, test questions, seconds per 100
      steps and their spread, other processes' CPU, the test errors of answering without
      reading (a guess among the document's entities, its most frequent entity)
"""

import csv
import math
import os
from dataclasses import dataclass, field
from typing import Optional

# The paper's figures quoted in the claims (its Tables 2, 4 and 10).
PAPER_SPEEDUP = {  # of RMSNorm and pRMSNorm over LayerNorm, %
    "gru": {"rmsnorm": 24.7, "prmsnorm": 25.9},
    "transformer": {"rmsnorm": 6.9, "prmsnorm": 9.3},
    "cnn": {"rmsnorm": 20.5, "prmsnorm": 23.1},
    "oe": {"rmsnorm": 40.8, "prmsnorm": 63.9},
    "reader": {"rmsnorm": 15.1, "prmsnorm": 15.8},
}

SIGNIFICANCE = 0.05  # the level at which a paired-bootstrap p-value is called significant
LEARNED_BLEU = 5.0   # below this test BLEU for both runs, the models barely translate yet


@dataclass
class Claim:
    title: str                                    # the claim, as the paper makes it
    paper: str                                    # what the paper measured for it
    findings: list = field(default_factory=list)  # one sentence per experiment


def read_rows(path: str) -> Optional[list]:
    """The CSV file's rows as dicts, or None when it is missing."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f))
    except OSError:
        return None


def _number(row: dict, column: str) -> Optional[float]:
    value = (row.get(column) or "").strip()
    try:
        return float(value)
    except ValueError:
        return None


def _row(rows: list, norm: str) -> Optional[dict]:
    """The first row of the norm: "prmsnorm" finds "prmsnorm:0.0625"."""
    for row in rows:
        name = row.get("norm", "")
        if name == norm or name.startswith(norm + ":"):
            return row
    return None


# ---- findings of one kind


def bleu_finding(rows: list, model: str, run: str, name: str) -> str:
    """`run` against LayerNorm in test BLEU, with the paired bootstrap's verdict."""
    layernorm, other = _row(rows, "layernorm"), _row(rows, run)
    if layernorm is None or other is None:
        return f"{model}: no {name} or no LayerNorm run."
    if layernorm.get("trained", "yes") != "yes":
        return f"{model}: LayerNorm {layernorm['trained']} in this run; too short to decide."
    if other.get("trained", "yes") != "yes":
        return f"{model}: {name} {other['trained']} in this run, while LayerNorm learned."
    bleu_ln, bleu = _number(layernorm, "test_bleu"), _number(other, "test_bleu")
    p = _number(other, "p_against_layernorm")
    if bleu_ln is None or bleu is None or p is None:
        return f"{model}: no test BLEU was measured."
    text = f"{model}: {name} {bleu:.2f} BLEU, LayerNorm {bleu_ln:.2f} ({bleu - bleu_ln:+.2f})"
    if max(bleu, bleu_ln) < LEARNED_BLEU:
        return text + f"; both below {LEARNED_BLEU:g} BLEU: too short to decide."
    if p < SIGNIFICANCE:
        side = "better" if bleu > bleu_ln else "worse"
        return (text + f"; the paired bootstrap finds the difference significant (p = {p:.3f}): "
                       f"{name} {side} in this run.")
    interval = _number(other, "test_bleu_interval") or 0.0
    return (text + f"; not significant (p = {p:.2f}): consistent with equal quality, though "
                   f"with a 95% interval of ±{interval:.1f} BLEU a difference that size is not "
                   "ruled out.")


def error_finding(rows: list, model: str, run: str, name: str, items: str = "images") -> str:
    """`run` against LayerNorm in test error, with the interval that the test set's size
    allows (two independent binomial proportions: wider than a paired test would give). The
    test set's size is the column test_<items>. Where the rows give the error of answering with
    the most frequent choice (test_frequent_error), runs that do not beat it are called too
    short to decide."""
    layernorm, other = _row(rows, "layernorm"), _row(rows, run)
    if layernorm is None or other is None:
        return f"{model}: no {name} or no LayerNorm run."
    error_ln, error = _number(layernorm, "test_error"), _number(other, "test_error")
    count = _number(other, f"test_{items}")
    if error_ln is None or error is None or not count:
        return f"{model}: no test error was measured."
    half_width = 1.96 * math.sqrt((error * (1 - error) + error_ln * (1 - error_ln)) / count)
    difference = error - error_ln
    text = (f"{model}: {name} {100 * error:.2f}% test error, LayerNorm {100 * error_ln:.2f}% "
            f"({100 * difference:+.2f} points)")
    frequent = _number(other, "test_frequent_error")
    if frequent is not None and min(error, error_ln) >= frequent:
        return (text + f"; neither below the {100 * frequent:.2f}% of answering with the most "
                       "frequent entity: too short to decide.")
    if abs(difference) > half_width:
        side = "lower" if difference < 0 else "higher"
        return (text + f"; beyond the ±{100 * half_width:.2f} points that {int(count)} test "
                       f"{items} leave to chance: {name}'s error {side} in this run.")
    return (text + f"; within the ±{100 * half_width:.2f} points that {int(count)} test {items} "
                   "leave to chance: consistent with equal quality.")


def recall_finding(rows: list, model: str, run: str, name: str) -> str:
    """`run` against LayerNorm in image retrieval R@1 (a caption finds its image; the direction
    the models are selected by), with the interval that the number of queries allows (two
    independent proportions, as error_finding), and caption retrieval R@1 beside it."""
    layernorm, other = _row(rows, "layernorm"), _row(rows, run)
    if layernorm is None or other is None:
        return f"{model}: no {name} or no LayerNorm run."
    recall_ln, recall = _number(layernorm, "image_r1"), _number(other, "image_r1")
    queries = _number(other, "test_captions")
    caption_ln, caption = _number(layernorm, "caption_r1"), _number(other, "caption_r1")
    if recall_ln is None or recall is None or not queries:
        return f"{model}: no test retrieval was measured."
    p, p_ln = recall / 100, recall_ln / 100
    half_width = 196 * math.sqrt((p * (1 - p) + p_ln * (1 - p_ln)) / queries)
    difference = recall - recall_ln
    text = (f"{model}: {name} image R@1 {recall:.1f}, LayerNorm {recall_ln:.1f} "
            f"({difference:+.1f} points")
    if caption is not None and caption_ln is not None:
        text += f"; caption R@1 {caption:.1f} against {caption_ln:.1f}"
    text += ")"
    if max(recall, recall_ln) < 1.0:
        return text + "; neither retrieves yet: too short to decide."
    if abs(difference) > half_width:
        side = "higher" if difference > 0 else "lower"
        return (text + f"; beyond the ±{half_width:.1f} points that {int(queries)} queries "
                       f"leave to chance: {name}'s recall {side} in this run.")
    return (text + f"; within the ±{half_width:.1f} points that {int(queries)} queries leave to "
                   "chance: consistent with equal quality.")


@dataclass
class Timing:
    value: float   # the median, in `unit`
    low: float     # the lower and upper end of its spread
    high: float
    others: float  # the share of the CPU other processes took, 0..1 (0: unknown)


def _nmt_timing(row: dict) -> Optional[Timing]:
    value, spread = _number(row, "seconds_per_1000_steps"), _number(row, "spread")
    if value is None:
        return None
    spread = spread or 0.0
    return Timing(value, value - spread, value + spread,
                  max(0.0, _number(row, "other_processes_cpu") or 0.0))


def _cnn_timing(row: dict) -> Optional[Timing]:
    value, spread = _number(row, "seconds_per_epoch"), _number(row, "seconds_spread")
    if value is None:
        return None
    half = value * (spread or 0.0) / 2
    return Timing(value, value - half, value + half, 0.0)


def _per_100_steps_timing(row: dict) -> Optional[Timing]:
    value = _number(row, "seconds_per_100_steps")
    spread = _number(row, "seconds_spread")
    if spread is None:
        spread = _number(row, "spread")  # the timing tables' name for it
    if value is None:
        return None
    half = value * (spread or 0.0) / 2
    return Timing(value, value - half, value + half, max(0.0, _number(row, "other_cpu") or 0.0))


def _time(value: float) -> str:
    return f"{value:.1f}" if value >= 1 else f"{value:.3g}"


def speed_finding(model: str, name: str, layernorm: Optional[Timing], other: Optional[Timing],
                  unit: str, paper: Optional[float]) -> str:
    """(T_LN - T) / T_LN, the paper's speed-up, with how far the spreads allow it."""
    if layernorm is None or other is None:
        return f"{model}: no {name} or no LayerNorm timing."
    speedup = 100 * (layernorm.value - other.value) / layernorm.value
    text = (f"{model}: {name} {_time(other.value)} {unit}, LayerNorm {_time(layernorm.value)}, a "
            f"speed-up of {speedup:.1f}%")
    if paper is not None:
        text += f" (paper: {paper:.1f}%)"
    if other.high == other.value == other.low and layernorm.high == layernorm.low:
        text += "; one measurement each, without a spread to judge it by"
    elif other.high < layernorm.low:
        text += "; the spreads of the two times do not overlap"
    elif other.value < layernorm.value:
        text += "; faster, but the spreads of the two times overlap: weak evidence from one run"
    else:
        text += f"; {name} is not faster in this run"
    busiest = max(layernorm.others, other.others)
    if busiest > 0.1:
        text += (f"; other processes took up to {100 * busiest:.0f}% of the CPU meanwhile, so "
                 "the times are disturbed")
    return text + "."


def nmt_speed_finding(rows: list, model: str, run: str, name: str, paper) -> str:
    layernorm, other = _row(rows, "layernorm"), _row(rows, run)
    return speed_finding(model, name, layernorm and _nmt_timing(layernorm),
                         other and _nmt_timing(other), "s / 1k steps", paper)


def cnn_speed_finding(rows: list, run: str, name: str, paper) -> str:
    layernorm, other = _row(rows, "layernorm"), _row(rows, run)
    return speed_finding("ConvPool-CNN-C", name, layernorm and _cnn_timing(layernorm),
                         other and _cnn_timing(other), "s / epoch", paper)


def per_100_steps_speed_finding(rows: list, model: str, run: str, name: str, paper) -> str:
    """The speed finding of an experiment whose rows give seconds per 100 steps (order
    embeddings, the attentive reader)."""
    layernorm, other = _row(rows, "layernorm"), _row(rows, run)
    return speed_finding(model, name, layernorm and _per_100_steps_timing(layernorm),
                         other and _per_100_steps_timing(other), "s / 100 steps", paper)


def mlp_speed_finding(rows: list, batch: str) -> str:
    at_batch = [r for r in rows if r.get("batch_size") == batch]
    timing = {}
    for norm in ("layernorm", "rmsnorm"):
        row = _row(at_batch, norm)
        ms = row and _number(row, "ms_per_step")
        if ms is not None:
            timing[norm] = Timing(ms, ms, ms, _number(row, "other_processes_cpu") or 0.0)
    return speed_finding(f"The MLP at batch {batch}", "RMSNorm", timing.get("layernorm"),
                         timing.get("rmsnorm"), "ms / step", None)


def trained_finding(rows: list, model: str, run: str, name: str) -> str:
    row = _row(rows, run)
    if row is None:
        return f"{model}: no {name} run."
    bleu = _number(row, "test_bleu")
    learned = row.get("trained", "yes")
    bleu_text = f", test BLEU {bleu:.2f}" if bleu is not None else ""
    if learned == "yes":
        return f"{model}: {name} trained (its loss fell by more than 10%){bleu_text}."
    return f"{model}: {name} {learned}{bleu_text}."


def invariance_finding(rows: list) -> str:
    differing = [r for r in rows if r.get("invariant") != r.get("paper")]
    if not rows:
        return "The invariance lab measured nothing."
    if not differing:
        return (f"All {len(rows)} cells measured agree with the paper's Table 1: each ✓ "
                "changed no output beyond rounding, each ✗ changed some.")
    cells = "; ".join(f"{r['method']}, {r['transformation']}: measured {r['invariant']}, paper "
                      f"{r['paper']}" for r in differing)
    agreeing = len(rows) - len(differing)
    return f"{agreeing} of {len(rows)} cells agree with the paper; differing: {cells}."


# ---- the claims


def _not_run(name: str, program: str) -> str:
    return f"{name}: not run (`scripts/reproduce {program}`)."


def claims(folders: dict) -> list:
    """The claims with this run's findings. `folders` maps an experiment's name ("gru",
    "transformer", "cnn", "oe", "reader", "mlp", "invariance") to its output folder, for those that have
    one."""
    def table(name: str, file: str) -> Optional[list]:
        return read_rows(os.path.join(folders[name], file)) if name in folders else None

    gru, transformer = table("gru", "table2.csv"), table("transformer", "table4.csv")
    pre_norm, cnn = table("transformer", "pre_norm.csv"), table("cnn", "table10.csv")
    mlp, invariance = table("mlp", "summary.csv"), table("invariance", "table1.csv")
    oe, reader = table("oe", "table7.csv"), table("reader", "table6.csv")
    # The speed-ups of Tables 6 and 8 at the paper's sizes when timed there.
    oe_speed = table("oe", "table8_paper_sizes.csv") or oe
    reader_speed = table("reader", "table6_paper_sizes.csv") or reader
    rnn, tf, conv = "RNNSearch (Table 2)", "Transformer (Table 4)", "ConvPool-CNN-C (Table 10)"
    retrieval, reading = "Order embeddings (Table 7)", "The attentive reader (Figure 5)"

    def quality_of(norm: str, name: str) -> list:
        """Each experiment's finding on `norm` against LayerNorm in BLEU or test error."""
        return [bleu_finding(gru, rnn, norm, name) if gru else _not_run(rnn, "gru"),
                bleu_finding(transformer, tf, norm, name) if transformer else
                _not_run(tf, "transformer"),
                error_finding(cnn, conv, norm, name) if cnn else _not_run(conv, "cnn"),
                recall_finding(oe, retrieval, norm, name) if oe else _not_run(retrieval, "oe"),
                error_finding(reader, reading, norm, name, "questions") if reader else
                _not_run(reading, "reader")]

    def speed_of(norm: str, name: str, say_not_run: bool) -> list:
        """Each experiment's finding on `norm`'s step time against LayerNorm's."""
        findings = []
        for rows, model, program, finding in (
                (gru, rnn, "gru", lambda: nmt_speed_finding(gru, rnn, norm, name,
                                                            PAPER_SPEEDUP["gru"][norm])),
                (transformer, tf, "transformer", lambda: nmt_speed_finding(
                    transformer, tf, norm, name, PAPER_SPEEDUP["transformer"][norm])),
                (cnn, conv, "cnn", lambda: cnn_speed_finding(cnn, norm, name,
                                                             PAPER_SPEEDUP["cnn"][norm])),
                (oe_speed, "Order embeddings (Table 8)", "oe",
                 lambda: per_100_steps_speed_finding(
                     oe_speed, "Order embeddings" + (
                         " at the paper's sizes" if oe_speed is not oe else ""),
                     norm, name, PAPER_SPEEDUP["oe"][norm])),
                (reader_speed, "The attentive reader (Table 6)", "reader",
                 lambda: per_100_steps_speed_finding(
                     reader_speed, "The attentive reader" + (
                         " at the paper's sizes" if reader_speed is not reader else ""),
                     norm, name, PAPER_SPEEDUP["reader"][norm]))):
            if rows:
                findings.append(finding())
            elif say_not_run:
                findings.append(_not_run(model, program))
        return findings

    quality = Claim("RMSNorm's quality matches LayerNorm's.",
                    "test BLEU 22.4 against 22.6 (RNNSearch), 26.8 against 26.6 (Transformer); "
                    "test error 8.83% against 10.49% (ConvPool-CNN-C); image retrieval R@1 39.0 "
                    "against 38.4 (order embeddings); the attentive reader's validation error "
                    "as low as LayerNorm's, and reached sooner (curves only, Figure 5).")
    quality.findings = quality_of("rmsnorm", "RMSNorm")
    if pre_norm:
        quality.findings.append(
            bleu_finding(pre_norm, "The pre-norm Transformer (not in the paper)", "rmsnorm",
                         "RMSNorm"))

    speed = Claim("RMSNorm's training step is shorter than LayerNorm's.",
                  "speed-ups of 24.7% (RNNSearch in TensorFlow; 34.0% in Theano, 11.0% in "
                  "PyTorch), 6.9% (Transformer), 20.5% (ConvPool-CNN-C), 40.8% (order "
                  "embeddings) and 15.1% (the attentive reader).")
    speed.findings = speed_of("rmsnorm", "RMSNorm", say_not_run=True)
    if mlp:
        speed.findings += [mlp_speed_finding(mlp, "128"), mlp_speed_finding(mlp, "4")]

    partial = Claim("pRMSNorm, the RMS of the first p of the units, keeps RMSNorm's quality and "
                    "is faster still.",
                    "speed-ups of 25.9%, 9.3%, 23.1%, 63.9% and 15.8% (against RMSNorm's "
                    "24.7%, 6.9%, 20.5%, 40.8% and 15.1%); BLEU 22.6 and 26.5, test error "
                    "10.37%, image retrieval R@1 39.0.")
    partial.findings = (quality_of("prmsnorm", "pRMSNorm") +
                        speed_of("prmsnorm", "pRMSNorm", say_not_run=False))

    l2 = Claim("L2-norm (x / ||x||, without RMSNorm's √n) does not match LayerNorm.",
               "RNNSearch: test BLEU 20.7 against LayerNorm's 22.6, below even no norm (21.7).")
    l2.findings = [bleu_finding(gru, rnn, "l2norm", "L2-norm") if gru else _not_run(rnn, "gru")]

    baseline = Claim("Without a norm, RNNSearch trains worse and the Transformer fails.",
                     "RNNSearch without a norm: BLEU 21.7 against 22.6, and more steps to a "
                     "given loss (Figure 1); the Transformer: training failed (BLEU 0); "
                     "ConvPool-CNN-C: 8.96% test error, better than LayerNorm's 10.49%; order "
                     "embeddings: image retrieval R@1 37.6 against 38.4; the attentive reader: "
                     "a higher validation error than LayerNorm's, reached later (Figure 5).")
    baseline.findings = [
        bleu_finding(gru, rnn, "none", "no norm") if gru else _not_run(rnn, "gru"),
        trained_finding(transformer, tf, "none", "the Transformer without a norm")
        if transformer else _not_run(tf, "transformer"),
        error_finding(cnn, conv, "none", "no norm") if cnn else _not_run(conv, "cnn"),
        recall_finding(oe, retrieval, "none", "no norm") if oe else _not_run(retrieval, "oe"),
        error_finding(reader, reading, "none", "no norm", "questions") if reader else
        _not_run(reading, "reader"),
    ]

    invariant = Claim("RMSNorm is invariant to re-scaling its weights and inputs, not to "
                      "re-centring them (Table 1).",
                      "Table 1, argued from the formulas.")
    invariant.findings = [invariance_finding(invariance) if invariance is not None else
                          _not_run("The invariance lab", "invariance")]

    return [quality, speed, partial, l2, baseline, invariant]


def markdown(claim_list: list) -> str:
    """The claims as numbered paragraphs, each finding a bullet under its claim."""
    text = ""
    for number, claim in enumerate(claim_list, 1):
        text += f"{number}. **{claim.title}** The paper: {claim.paper}\n"
        for finding in claim.findings:
            text += f"   - {finding}\n"
        text += "\n"
    return text
