#!/usr/bin/env python3
"""Times gru_nmt's RnnSearch (training steps and decoding) against its PyTorch twin on real
batches of the corpus, and writes the table into bench/RESULTS.md (between the gru-nmt
markers), keeping the other sections.

Usage: python3 bench/run_gru_nmt.py BUILD_DIR   (a Release build with the examples and
           bench_gru_nmt; run it with a Python that imports torch, or pass --torch-python)
       python3 bench/run_gru_nmt.py BUILD_DIR --quick   (a check of the pipeline)

For each preset (cpu: embedding 128, hidden 256, vocabulary 8000; paper: 512, 1024, 32000),
bench_gru_nmt first writes its batches (the first 20 batches of 80 sentences of the seeded
training order) so that both sides train on the same token ids in the same order. Then, in
rounds, each run after waiting for an idle CPU: normgrad with every norm (none, layernorm,
l2norm, rmsnorm, prmsnorm:0.0625), PyTorch with norm none twice, once as it comes and once with
glibc's malloc kept from returning memory to the system (MALLOC_MMAP_MAX_=0,
MALLOC_TRIM_THRESHOLD_=4294967296, which spares PyTorch the page faults of fresh large
buffers); the goal is held against the faster of the two; even rounds run in reverse order.
Last, decoding: 400 dev sentences with beam 5 and greedily, untrained weights. All on 2 threads. Times are the medians of all
timed steps (passes) over the rounds. Python 3 standard library only (PyTorch only inside
bench_gru_nmt_torch.py).

Goals: normgrad's steps/s at least 2x PyTorch's (norm none, both presets); at the paper preset,
RMSNorm's cost over no norm at most LayerNorm's and at most 10%.
"""

import argparse
import json
import os
import pathlib
import statistics
import sys

from run_benchmarks import THREADS, run_once, run_rounds, twin_section_header, write_section

HERE = pathlib.Path(__file__).resolve().parent
TORCH_SCRIPT = HERE / "bench_gru_nmt_torch.py"
BEGIN_MARKER, END_MARKER = "<!-- gru-nmt:begin -->", "<!-- gru-nmt:end -->"
PRESETS = ("cpu", "paper")
PRESET_NAMES = {"cpu": "cpu (E128, H256, V8000)", "paper": "paper (E512, H1024, V32000)"}
NORMS = ("none", "layernorm", "l2norm", "rmsnorm", "prmsnorm:0.0625")
# PyTorch's two runs: as it comes, and with glibc's malloc holding on to freed memory.
TORCH_VARIANTS = {"torch": {}, "torch-malloc": {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": "4294967296"}}
SPEED_GOAL = 2.0  # normgrad's steps/s over PyTorch's
RMSNORM_MAX_OVERHEAD = 0.10  # at the paper preset


def batches_path(build_dir, preset):
    return build_dir / "bench" / f"gru_nmt_batches_{preset}.safetensors"


def program(build_dir):
    executable = build_dir / "bench" / "bench_gru_nmt"
    if not executable.exists():
        sys.exit(f"{executable} not found: build it with cmake --build {build_dir} --target bench_gru_nmt "
                 "(NORMGRAD_BUILD_EXAMPLES=ON, NORMGRAD_BUILD_BENCH=ON, a Release build)")
    return executable


def runs(build_dir, corpus, presets, steps, warmup, sentences, torch_python):
    """(key, command, extra environment) of every run of a round; key is (kind, preset, name)."""
    executable = program(build_dir)
    common = ["--steps", str(steps), "--warmup", str(warmup)]
    for preset in presets:
        for norm in NORMS:
            yield (("train", preset, f"normgrad {norm}"),
                   [executable, "--corpus", corpus, "--preset", preset, "--norm", norm, *common], {})
        for variant, extra in TORCH_VARIANTS.items():
            yield (("train", preset, variant),
                   [torch_python, TORCH_SCRIPT, "--batches", batches_path(build_dir, preset), "--preset", preset,
                    "--threads", THREADS, *common], extra)
    for preset in presets:
        # One timed pass over the sentences per round (a pass is long already).
        yield (("decode", preset, "normgrad none"),
               [executable, "--corpus", corpus, "--preset", preset, "--decode", "--sentences", str(sentences),
                "--steps", "1", "--warmup", "0"], {})


def write_batches(build_dir, corpus, presets):
    """The batches both sides train on (and the tokenizers, trained once, when absent)."""
    environment = dict(os.environ, OMP_NUM_THREADS=THREADS)
    for preset in presets:
        path = batches_path(build_dir, preset)
        print(f"writing the {preset} batches to {path}", file=sys.stderr, flush=True)
        run_once([program(build_dir), "--corpus", corpus, "--preset", preset, "--write-batches", path], environment)


def measure(arguments, presets):
    write_batches(arguments.build_dir, arguments.corpus, presets)
    plan = list(runs(arguments.build_dir, arguments.corpus, presets, arguments.steps, arguments.warmup,
                     arguments.sentences, arguments.torch_python))
    return run_rounds(plan, arguments.rounds, arguments.quick, dict(os.environ, OMP_NUM_THREADS=THREADS))


def train_summary(runs_of):
    steps = [seconds for run in runs_of for seconds in run["step_seconds"]]
    median = statistics.median(steps)
    return {"median": median, "rate": 1 / median, "spread": (max(steps) - min(steps)) / median,
            "count": len(steps), "rss": statistics.median(run["peak_rss_growth_bytes"] for run in runs_of),
            "framework": runs_of[0]["framework"], "loss": runs_of[0]["first_token_loss"]}


def decode_summary(runs_of, search):
    passes = [seconds for run in runs_of for seconds in run[search]["pass_seconds"]]
    sentences = runs_of[0]["sentences"]
    return {"rate": sentences / statistics.median(passes), "count": len(passes), "sentences": sentences,
            "length": runs_of[0][search]["mean_output_subwords"]}


def mib(value):
    return f"{value / (1 << 20):.0f} MiB"


def verdict(ok):
    return "pass" if ok else "**FAIL**"


def section(results, arguments, presets):
    def train(preset, name):
        return train_summary(results[f"train/{preset}/{name}"])

    lines = twin_section_header(
        BEGIN_MARKER, "gru_nmt (RNNSearch) against PyTorch", arguments.build_dir,
        results[f"train/{presets[0]}/torch"][0]["framework"], results,
        f"{arguments.corpus} (scripts/build_corpus); the first 20 batches of 80 sentences of the seeded "
        "training order, the same token ids on both sides", arguments.quick)
    lines += ["", "One step: zero_grad, forward, cross-entropy with label smoothing 0.1 summed per sentence, "
              "backward, clipping at global norm 1, Adam, timed after one untimed pass over the 20 batches. "
              "normgrad computes the real (unpadded) positions only: its encoder runs packed and the decoder's "
              "rows are sorted by target length, so that each step runs the sentences still going. The twin packs "
              "its encoder where it can (torch.nn.GRU over a packed sequence, norm none) and runs the decoder and "
              "the output layer over the padded batch, as PyTorch code usually does. Steps/s is 1 / the median "
              "of all timed steps over the "
              "rounds (spread: (max - min) / median of the step times; batches differ in length). PyTorch's "
              "second run keeps glibc's freed memory (MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=4294967296); "
              "the goal is held against the faster of its two runs. Peak memory: the peak resident set minus the "
              "resident set before the model was built. Loss: the first step's loss per target token (log V "
              "for an untrained model).", "",
              "| preset | normgrad steps/s | PyTorch steps/s | PyTorch steps/s, malloc kept | normgrad / best "
              f"PyTorch | goal ≥ {SPEED_GOAL:.0f}x | peak memory normgrad / PyTorch | first loss normgrad / PyTorch |",
              "|---|---|---|---|---|---|---|---|"]
    for preset in presets:
        ours, plain, kept = train(preset, "normgrad none"), train(preset, "torch"), train(preset, "torch-malloc")
        best = max(plain, kept, key=lambda summary: summary["rate"])
        ratio = ours["rate"] / best["rate"]
        lines.append(" | ".join([
            f"| {PRESET_NAMES[preset]}",
            *(f"{s['rate']:.2f} ±{s['spread']:.0%} (n={s['count']})" for s in (ours, plain, kept)),
            f"{ratio:.2f}x", verdict(ratio >= SPEED_GOAL), f"{mib(ours['rss'])} / {mib(best['rss'])}",
            f"{ours['loss']:.3f} / {best['loss']:.3f} |"]))
    lines += ["", "Each norm's cost in normgrad: its step time over the step time without norms (every norm slot of "
              "the model filled: four per GRU, the attention's two terms, the initial state, the deep output).", "",
              "| preset | " + " | ".join(NORMS) + " | goal: RMSNorm ≤ LayerNorm" + " and ≤ "
              f"{RMSNORM_MAX_OVERHEAD:.0%} (paper) |",
              "|---|" + "---|" * len(NORMS) + "---|"]
    for preset in presets:
        plain = train(preset, "normgrad none")
        cells = [PRESET_NAMES[preset]]
        overheads = {}
        for norm in NORMS:
            summary = train(preset, f"normgrad {norm}")
            overheads[norm] = summary["median"] / plain["median"] - 1
            cells.append(f"{summary['rate']:.2f} steps/s" + ("" if norm == "none" else f", {overheads[norm]:+.1%}"))
        rms, layer = overheads["rmsnorm"], overheads["layernorm"]
        if preset == "paper":
            cells.append(verdict(rms <= layer and rms <= RMSNORM_MAX_OVERHEAD))
        else:
            cells.append(f"{'≤' if rms <= layer else '>'} LayerNorm's (no goal)")
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Decoding in normgrad (norm none, gru_nmt::translate_n_best, 32 sentences a batch, length penalty "
              "average): dev sentences per second. The weights are untrained (the seeded initialisation), so "
              "hypotheses are limited as gru_nmt translate limits them, to 2 x source length + 10 subwords; "
              "the mean output length is given beside the rate.", "",
              "| preset | beam 5: sentences/s | greedy: sentences/s | mean output subwords, beam 5 / greedy |",
              "|---|---|---|---|"]
    for preset in presets:
        runs_of = results[f"decode/{preset}/normgrad none"]
        beam, greedy = decode_summary(runs_of, "beam5"), decode_summary(runs_of, "greedy")
        lines.append(f"| {PRESET_NAMES[preset]} ({beam['sentences']} sentences) | {beam['rate']:.1f} "
                     f"(n={beam['count']}) | {greedy['rate']:.1f} (n={greedy['count']}) | "
                     f"{beam['length']:.1f} / {greedy['length']:.1f} |")
    flags = " --quick" if arguments.quick else ""
    lines += ["", f"Measured with `python3 bench/run_gru_nmt.py {arguments.build_dir}{flags}`.", "", END_MARKER]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build_dir", type=pathlib.Path, help="a Release build directory")
    parser.add_argument("--corpus", type=pathlib.Path, default=HERE.parent / "out" / "corpus" / "debian-en-de")
    parser.add_argument("--results", type=pathlib.Path, default=HERE / "RESULTS.md")
    parser.add_argument("--presets", default=",".join(PRESETS), help="comma-separated: cpu,paper")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20, help="timed steps per run")
    parser.add_argument("--warmup", type=int, default=20,
                        help="untimed steps first (20: one pass over the batches, so that both sides' "
                             "allocators hold memory for the longest batch before the timing starts)")
    parser.add_argument("--sentences", type=int, default=400, help="dev sentences to translate")
    parser.add_argument("--torch-python", default=sys.executable, help="a Python that imports torch")
    parser.add_argument("--from-saved", action="store_true",
                        help="run nothing: rebuild the table from the last run's results in BUILD_DIR/bench")
    parser.add_argument("--no-write", action="store_true", help="print the table only")
    parser.add_argument("--quick", action="store_true",
                        help="1 round of 1 step, 16 sentences, no waiting for an idle CPU")
    arguments = parser.parse_args()
    presets = tuple(preset for preset in arguments.presets.split(",") if preset)
    if not set(presets) <= set(PRESETS):
        parser.error(f"--presets: each of {', '.join(PRESETS)}")
    if arguments.quick:
        arguments.rounds, arguments.steps, arguments.warmup, arguments.sentences = 1, 1, 0, 16
    saved = arguments.build_dir / "bench" / "gru_nmt_results.json"
    if arguments.from_saved:
        results = json.loads(saved.read_text())
    else:
        results = measure(arguments, presets)
        saved.write_text(json.dumps(results, indent=1))
    text = section(results, arguments, presets)
    print(text)
    if not arguments.no_write:
        write_section(arguments.results, text, BEGIN_MARKER, END_MARKER)
        print(f"updated {arguments.results}", file=sys.stderr)


if __name__ == "__main__":
    main()
