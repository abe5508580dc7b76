#!/usr/bin/env python3
"""Times examples/convpool_cnn_c's training step against its PyTorch twin at batch 100, with
every normaliser, and writes the table into bench/RESULTS.md (between the convpool-cnn-c
markers), keeping the other sections.

Usage: python3 bench/run_convpool_cnn_c.py BUILD_DIR   (a Release build with the examples and
           bench_convpool_cnn_c; run it with a Python that imports torch, or pass --torch-python)
       python3 bench/run_convpool_cnn_c.py BUILD_DIR --quick   (a check of the pipeline)

bench_convpool_cnn_c first writes the batches (4 batches of 100 images, 3 x 32 x 32, N(0, 1)
values and uniform labels from a fixed seed) so that both sides train on the same values. Then,
in rounds, each run after waiting for an idle CPU: normgrad and PyTorch with every norm, PyTorch
twice (as it comes, and with glibc's malloc kept from returning memory to the system:
MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=4294967296); the goal is held against the faster of
the two; even rounds run in reverse order. All on 2 threads. Times are the medians of all timed
steps over the rounds.

Goal: normgrad's step at most 1.0x PyTorch's time, with no norm and with each norm.
"""

import argparse
import datetime
import os
import pathlib
import statistics
import sys

from run_benchmarks import THREADS, cpu_model, run_once, run_rounds, source_version, write_section

HERE = pathlib.Path(__file__).resolve().parent
TORCH_SCRIPT = HERE / "bench_convpool_cnn_c_torch.py"
BEGIN_MARKER, END_MARKER = "<!-- convpool-cnn-c:begin -->", "<!-- convpool-cnn-c:end -->"
NORMS = ("none", "batchnorm", "weightnorm", "layernorm", "rmsnorm", "prmsnorm:0.125")
TORCH_VARIANTS = {"torch": {}, "torch-malloc": {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": "4294967296"}}
GOAL = 1.0  # normgrad's step time over PyTorch's, at most


def program(build_dir):
    executable = build_dir / "bench" / "bench_convpool_cnn_c"
    if not executable.exists():
        sys.exit(f"{executable} not found: build it with cmake --build {build_dir} --target bench_convpool_cnn_c "
                 "(NORMGRAD_BUILD_EXAMPLES=ON, NORMGRAD_BUILD_BENCH=ON, a Release build)")
    return executable


def measure(arguments):
    executable = program(arguments.build_dir)
    inputs = arguments.build_dir / "bench" / "convpool_cnn_c_inputs.safetensors"
    environment = dict(os.environ, OMP_NUM_THREADS=THREADS)
    run_once([executable, "--write-inputs", inputs], environment)
    common = ["--steps", str(arguments.steps), "--warmup", str(arguments.warmup), "--width", str(arguments.width)]
    plan = []
    for norm in arguments.norms:
        plan.append(((norm, "normgrad"), [executable, "--norm", norm, "--threads", THREADS, *common], {}))
        for variant, extra in TORCH_VARIANTS.items():
            plan.append(((norm, variant), [arguments.torch_python, TORCH_SCRIPT, "--inputs", inputs, "--norm", norm,
                                           "--threads", THREADS, *common], extra))
    return run_rounds(plan, arguments.rounds, arguments.quick, environment)


def summary(runs):
    steps = [seconds for run in runs for seconds in run["step_seconds"]]
    median = statistics.median(steps)
    return {"median": median, "spread": (max(steps) - min(steps)) / median, "count": len(steps),
            "rss": statistics.median(run["peak_rss_growth_bytes"] for run in runs),
            "framework": runs[0]["framework"], "foreign": max(run["foreign_cpu_share"] for run in runs)}


def section(results, arguments):
    lines = [BEGIN_MARKER, "", "## convpool_cnn_c (ConvPool-CNN-C) against PyTorch", "",
             f"- Date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M +0000')}",
             f"- CPU: {cpu_model()}, {os.cpu_count()} cores; {THREADS} threads on both sides",
             f"- Library sources: {source_version(arguments.build_dir)}",
             f"- Width {arguments.width}, batch 100, 3 x 32 x 32 inputs; {arguments.rounds} rounds of "
             f"{arguments.steps} timed steps after {arguments.warmup} untimed", ""]
    lines += ["One step: zero_grad, forward (noise, dropout), mean cross-entropy, backward, Adam. PyTorch's second "
              "run keeps glibc's freed memory; the goal is held against the faster. Spread: (max - min) / median of "
              "the step times. Peak memory: the peak resident set minus the resident set before the model was built.",
              "", "| norm | normgrad | PyTorch | PyTorch, malloc kept | normgrad / best PyTorch time | goal <= 1.0x "
              "| peak memory normgrad / PyTorch |", "|---|---|---|---|---|---|---|"]
    foreign = 0.0
    for norm in arguments.norms:
        ours = summary(results[f"{norm}/normgrad"])
        theirs = {variant: summary(results[f"{norm}/{variant}"]) for variant in TORCH_VARIANTS}
        best = min(theirs.values(), key=lambda s: s["median"])
        ratio = ours["median"] / best["median"]
        foreign = max(foreign, ours["foreign"], *(s["foreign"] for s in theirs.values()))
        cell = lambda s: f"{s['median'] * 1e3:.0f} ms ±{100 * s['spread']:.0f}% (n={s['count']})"
        lines.append(f"| {norm} | {cell(ours)} | {cell(theirs['torch'])} | {cell(theirs['torch-malloc'])} | "
                     f"{ratio:.2f}x | {'pass' if ratio <= GOAL else '**FAIL**'} | "
                     f"{ours['rss'] / (1 << 20):.0f} MiB / {best['rss'] / (1 << 20):.0f} MiB |")
    lines += ["", f"Most CPU time taken by other processes during one run: {100 * foreign:.1f}%.", "",
              f"Measured with `python3 bench/run_convpool_cnn_c.py {arguments.build_dir}`.", "", END_MARKER]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build_dir", type=pathlib.Path, help="a Release build directory")
    parser.add_argument("--results", type=pathlib.Path, default=HERE / "RESULTS.md")
    parser.add_argument("--norms", default=",".join(NORMS), help="comma-separated")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=5, help="timed steps per run")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--width", type=float, default=1.0)
    parser.add_argument("--torch-python", default=sys.executable, help="a Python that imports torch")
    parser.add_argument("--no-write", action="store_true", help="print the table only")
    parser.add_argument("--quick", action="store_true", help="1 round of 1 step at width 0.25, no waiting")
    arguments = parser.parse_args()
    arguments.norms = arguments.norms.split(",")
    if arguments.quick:
        arguments.rounds, arguments.steps, arguments.warmup, arguments.width = 1, 1, 1, 0.25
    results = measure(arguments)
    text = section(results, arguments)
    print(text)
    if not arguments.no_write and not arguments.quick:
        write_section(arguments.results, text, BEGIN_MARKER, END_MARKER)


if __name__ == "__main__":
    main()
