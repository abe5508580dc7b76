#!/usr/bin/env python3
"""Times whole training steps in mixed precision (--precision bfloat16: bfloat16 activations,
float32 parameters) against float32, for the three examples' models, and prints a Markdown
table: the float32 step and the bfloat16 ÷ float32 ratio of each round, with their median.

Usage: python3 bench/run_mixed_precision.py BUILD_DIR [--corpus FOLDER] [--rounds N]
       python3 bench/run_mixed_precision.py BUILD_DIR --quick   (a check of the pipeline)

Models, with RMSNorm, on 2 threads: bench_convpool_cnn_c --width 0.25 --batch 100 (random
images), bench_transformer_nmt --preset small and bench_gru_nmt --preset small (4 batches of
the corpus that scripts/build_corpus writes; both are left out, with a note, when it is
absent). Each round times both precisions back to back, each process after waiting for an
idle CPU, and reverses the order every other round; a process reports the median of its timed
steps. The ratio is taken within a round, so that a machine that drifts between rounds weighs
on both sides alike. A ratio to report must hold in two runs of this script.
"""

import argparse
import os
import pathlib
import statistics
import sys

from run_benchmarks import THREADS, cpu_model, run_rounds, source_version

HERE = pathlib.Path(__file__).resolve().parent
PRECISIONS = ("float32", "bfloat16")


def models(corpus):
    """(name, program, flags) of each model; the NMT ones only with a corpus."""
    common = ["--norm", "rmsnorm"]
    found = [("ConvPool-CNN-C, width 0.25", "bench_convpool_cnn_c",
              [*common, "--width", "0.25", "--batch", "100"])]
    if (corpus / "train.en").exists():
        nmt = [*common, "--corpus", corpus, "--preset", "small", "--batches", "4"]
        found.append(("Transformer, small", "bench_transformer_nmt", nmt))
        found.append(("RNNSearch, small", "bench_gru_nmt", nmt))
    else:
        print(f"note: no corpus at {corpus} (scripts/build_corpus writes it): the Transformer and "
              "RNNSearch are left out", file=sys.stderr)
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build_dir", type=pathlib.Path)
    parser.add_argument("--corpus", type=pathlib.Path, default=HERE.parent / "out" / "corpus" / "debian-en-de")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="one short round, no waiting for an idle CPU")
    arguments = parser.parse_args()
    if arguments.quick:
        arguments.rounds, arguments.steps, arguments.warmup = 1, 2, 1

    plan = []
    chosen = models(arguments.corpus)
    for name, program, flags in chosen:
        executable = arguments.build_dir / "bench" / program
        if not executable.exists():
            sys.exit(f"{executable} not found: build it (NORMGRAD_BUILD_EXAMPLES=ON, NORMGRAD_BUILD_BENCH=ON)")
        for precision in PRECISIONS:
            plan.append(((name, precision), [executable, *flags, "--precision", precision, "--steps",
                                             str(arguments.steps), "--warmup", str(arguments.warmup)], {}))
    environment = dict(os.environ, OMP_NUM_THREADS=THREADS)
    reports = run_rounds(plan, arguments.rounds, arguments.quick, environment)

    print(f"{cpu_model()}, {THREADS} threads; {source_version(arguments.build_dir)}\n")
    print("| model | float32 step (median) | bf16 ÷ f32 (median) | rounds |")
    print("|---|---|---|---|")
    for name, _, _ in chosen:
        float32 = [r["median_seconds"] for r in reports[f"{name}/float32"]]
        bfloat16 = [r["median_seconds"] for r in reports[f"{name}/bfloat16"]]
        ratios = [b / f for b, f in zip(bfloat16, float32)]
        rounds = ", ".join(f"{ratio:.2f}" for ratio in ratios)
        print(f"| {name} | {statistics.median(float32) * 1e3:.0f} ms | {statistics.median(ratios):.2f}× "
              f"| {rounds} |")


if __name__ == "__main__":
    main()
