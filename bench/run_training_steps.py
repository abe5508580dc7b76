#!/usr/bin/env python3
"""Times whole training steps of normgrad against PyTorch and writes the table into
bench/RESULTS.md (between the training markers), keeping the other sections.

Usage: python3 bench/run_training_steps.py BUILD_DIR   (a Release build with bench_training_step)
       python3 bench/run_training_steps.py BUILD_DIR --quick   (a check of the pipeline)
       python3 bench/run_training_steps.py BUILD_DIR --device cuda   (both on a GPU; the table
           goes between the cuda-training markers, peak memory is the allocators' peak, goal 1.5x)

The models (their twins in bench_training_step_torch.py):
  gru  a GRU language model (training_models.h): batch 80, 50 steps, embedding 256, hidden 512,
       vocabulary 8000;
  cnn  examples/convpool_cnn_c's ConvPool-CNN-C (paper, Appendix A.4): batch 64, 3x32x32.
Each step is zero_grad, forward, cross-entropy, backward and an Adam update, on 2 threads.
The programs run in rounds, normgrad and PyTorch alternating, each after waiting for an idle
CPU, and the median of all their timed steps is kept, so that a slow spell on a shared machine
does not fall on one side only. Peak memory is the process's peak resident set minus its
resident set before the model was built, measured the same way on both sides. Python 3
standard library only (PyTorch only inside bench_training_step_torch.py).
"""

import argparse
import datetime
import json
import os
import pathlib
import statistics
import subprocess
import sys

from run_benchmarks import THREADS, cpu_model, run_once, source_version, wait_until_idle, write_section

HERE = pathlib.Path(__file__).resolve().parent
TORCH_SCRIPT = HERE / "bench_training_step_torch.py"
MARKERS = {"cpu": ("<!-- training:begin -->", "<!-- training:end -->"),
           "cuda": ("<!-- cuda-training:begin -->", "<!-- cuda-training:end -->")}
CUDA_GOAL = 1.5  # normgrad / PyTorch on the same GPU, on the way to parity

# (model, norm, with PyTorch beside it, goal as the largest normgrad / PyTorch time ratio)
CONFIGURATIONS = (
    ("gru", "none", True, 1.0),
    ("gru", "layernorm", False, None),
    ("gru", "rmsnorm", False, None),
    ("cnn", "none", True, 1.25),
)
MODEL_NAMES = {"gru": "GRU language model, batch 80 x 50 steps, vocabulary 8000",
               "cnn": "ConvPool-CNN-C, batch 64, 3x32x32"}


def command(build_dir, framework, model, norm, steps, warmup, device, options=()):
    """The command of one run; `options` are bench_training_step's own (--graph, --conv)."""
    common = ["--model", model, "--steps", str(steps), "--warmup", str(warmup), "--device", device]
    if framework == "torch":
        return [sys.executable, TORCH_SCRIPT, *common, "--threads", THREADS]
    return [build_dir / "bench" / "bench_training_step", *common, "--norm", norm, *options]


def measure(build_dir, rounds, steps, warmup, quick, device, options=()):
    """Maps (framework, model, norm) to its runs' JSON results, each with the CPU share that
    other processes took while it ran."""
    environment = dict(os.environ, OMP_NUM_THREADS=THREADS)
    results = {}
    for round_index in range(rounds):
        for model, norm, with_torch, _goal in CONFIGURATIONS:
            for framework in ("normgrad", "torch") if with_torch else ("normgrad",):
                if not quick:
                    wait_until_idle()
                print(f"  round {round_index + 1}/{rounds}: {framework} {model} {norm}", file=sys.stderr,
                      flush=True)
                output, foreign = run_once(
                    command(build_dir, framework, model, norm, steps, warmup, device, options), environment)
                result = json.loads(output)
                result["foreign_cpu_share"] = foreign
                results.setdefault((framework, model, norm), []).append(result)
    return results


def seconds(value):
    """A step time in seconds, or in milliseconds below a tenth of a second (GPU steps)."""
    return f"{value * 1e3:.2f} ms" if value < 0.1 else f"{value:.3f} s"


def summary(runs):
    steps = [seconds for run in runs for seconds in run["step_seconds"]]
    return {
        "median": statistics.median(steps),
        "spread": (max(steps) - min(steps)) / statistics.median(steps),
        "count": len(steps),
        "rss": statistics.median(run["peak_rss_growth_bytes"] for run in runs),
        "tensors": max((run.get("peak_tensor_bytes", 0) for run in runs), default=0),
        "foreign": max(run["foreign_cpu_share"] for run in runs),
        "framework": runs[0]["framework"],
    }


def mib(value):
    return f"{value / (1 << 20):.0f} MiB"


def section(results, build_dir, quick, device):
    begin_marker, end_marker = MARKERS[device]
    on_gpu = device == "cuda"
    ours = {(model, norm): summary(results[("normgrad", model, norm)]) for model, norm, _, _ in CONFIGURATIONS}
    theirs = {(model, norm): summary(results[("torch", model, norm)])
              for model, norm, with_torch, _ in CONFIGURATIONS if with_torch}
    torch_name = next(iter(theirs.values()))["framework"] if theirs else "PyTorch"
    title = "## Training steps on a GPU against PyTorch" if on_gpu else "## Training steps against PyTorch"
    lines = [begin_marker, "", title, "",
             f"- Date: {datetime.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %z')}",
             f"- CPU: {cpu_model()}, {os.cpu_count()} cores; {THREADS} threads on both sides"
             + ("; the models and data on cuda:0" if on_gpu else ""),
             f"- Library sources: {source_version(build_dir)}; {torch_name}",
             "- Most CPU time taken by other processes during one run: "
             + f"{max(s['foreign'] for s in [*ours.values(), *theirs.values()]):.1%}"]
    if quick:
        lines.append("- **Quick run** (`--quick`): a check of the pipeline, not a measurement")
    lines += ["", "One step: zero_grad, forward, cross-entropy, backward, Adam. Times are the medians of all "
              "timed steps over the rounds (spread: (max - min) / median). Peak memory: the peak resident set "
              "minus the resident set before the model was built.", "",
              "| model | norm | normgrad | PyTorch | normgrad / PyTorch | goal | peak memory normgrad / PyTorch "
              "| normgrad's peak in tensors |",
              "|---|---|---|---|---|---|---|---|"]
    for model, norm, with_torch, goal in CONFIGURATIONS:
        mine = ours[(model, norm)]
        cells = [MODEL_NAMES[model], norm, f"{seconds(mine['median'])} ±{mine['spread']:.0%} (n={mine['count']})"]
        if with_torch:
            other = theirs[(model, norm)]
            ratio = mine["median"] / other["median"]
            goal = CUDA_GOAL if on_gpu else goal
            memory = (f"{mib(mine['tensors'])} / {mib(other.get('tensors', 0))} (allocators' peaks)" if on_gpu
                      else f"{mib(mine['rss'])} / {mib(other['rss'])}")
            verdict = "pass" if ratio <= goal else "**FAIL**"
            cells += [f"{seconds(other['median'])} ±{other['spread']:.0%} (n={other['count']})", f"{ratio:.2f}x",
                      f"≤ {goal:.2f}x: {verdict}", memory]
        else:
            plain = ours[(model, "none")]
            cells += ["—", f"{mine['median'] / plain['median']:.2f}x our plain {model.upper()}", "—",
                      f"{mib(mine['rss'])} / —"]
        cells.append(mib(mine["tensors"]))
        lines.append("| " + " | ".join(cells) + " |")
    flags = " --device cuda" if on_gpu else ""
    lines += ["", f"Measured with `python3 bench/run_training_steps.py {build_dir}{flags}`.", "", end_marker]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build_dir", type=pathlib.Path, help="a Release build directory")
    parser.add_argument("--results", type=pathlib.Path, default=HERE / "RESULTS.md")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, help="timed steps per run (default: 3 on the CPU, 20 on a GPU)")
    parser.add_argument("--warmup", type=int,
                        help="untimed steps first (default: 1 on the CPU; 5 on a GPU, whose clock climbs "
                             "from its idle speed over the first steps)")
    parser.add_argument("--no-write", action="store_true", help="print the table only")
    parser.add_argument("--quick", action="store_true", help="1 round of 1 step, no waiting for an idle CPU")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--graph", action="store_true",
                        help="normgrad replays whole steps as a CUDA graph (with --device cuda; the "
                             "table then goes to the output only)")
    parser.add_argument("--conv", choices=["columns", "implicit"], default="columns",
                        help="how normgrad's CUDA convolutions multiply: through columns and cuBLAS, or "
                             "as one implicit-GEMM kernel (implicit: the table goes to the output only)")
    arguments = parser.parse_args()
    if arguments.graph and arguments.device != "cuda":
        parser.error("--graph needs --device cuda")
    if arguments.conv == "implicit" and arguments.device != "cuda":
        parser.error("--conv implicit needs --device cuda")
    options = [*(["--graph"] if arguments.graph else []), "--conv", arguments.conv]
    on_gpu = arguments.device == "cuda"
    steps = arguments.steps if arguments.steps is not None else (20 if on_gpu else 3)
    warmup = arguments.warmup if arguments.warmup is not None else (5 if on_gpu else 1)
    rounds, steps = (1, 1) if arguments.quick else (arguments.rounds, steps)
    results = measure(arguments.build_dir, rounds, steps, warmup, arguments.quick, arguments.device,
                      options)
    text = section(results, arguments.build_dir, arguments.quick, arguments.device)
    if arguments.graph:
        text = text.replace("One step: zero_grad, forward, cross-entropy, backward, Adam.",
                            "One step: zero_grad, forward, cross-entropy, backward, Adam; normgrad replays it "
                            "as a CUDA graph (`--graph`, Adam capturable).")
    if arguments.conv == "implicit":
        text = text.replace("One step: zero_grad,", "normgrad's convolutions as implicit GEMMs (`--conv "
                            "implicit`). One step: zero_grad,")
    print(text)
    if not arguments.no_write and not arguments.graph and arguments.conv == "columns":
        write_section(arguments.results, text, *MARKERS[arguments.device])
        print(f"updated {arguments.results}", file=sys.stderr)


if __name__ == "__main__":
    main()
