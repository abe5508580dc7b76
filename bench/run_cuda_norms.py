#!/usr/bin/env python3
"""Times the fused normalisers on a GPU against its copy bandwidth and PyTorch, and writes the
table into bench/RESULTS.md (between the cuda-norms markers), keeping the other sections.

Usage: python3 bench/run_cuda_norms.py BUILD_DIR             (a Release build with bench_norms_cuda)
       python3 bench/run_cuda_norms.py BUILD_DIR --device cpu --quick --no-write
                                                            (a check of the pipeline without a GPU)

Runs bench_norms_cuda and bench_norms_cuda_torch.py (when PyTorch imports) and checks the goals:
RMSNorm forward at >= 90% of the device's copy bandwidth and backward at >= 85%, at every
shape; RMSNorm's forward + backward never slower than LayerNorm's; and forward + backward at least
1.5x faster than PyTorch's at the same shape (our LayerNorm against torch.nn.LayerNorm, our
RMSNorm against torch.nn.RMSNorm). Python 3 standard library only.
"""

import argparse
import datetime
import json
import pathlib
import subprocess
import sys

from run_benchmarks import source_version, write_section

HERE = pathlib.Path(__file__).resolve().parent
TORCH_SCRIPT = HERE / "bench_norms_cuda_torch.py"
BEGIN_MARKER = "<!-- cuda-norms:begin -->"
END_MARKER = "<!-- cuda-norms:end -->"
NAMES = {"layer_norm": "LayerNorm (gain, bias)", "rms_norm": "RMSNorm (gain)",
         "partial_rms_norm": "pRMSNorm (gain, p = 6.25%)"}
PASSES = ("forward", "backward", "forward_backward")
FORWARD_GOAL, BACKWARD_GOAL, LAYER_NORM_OVER_RMS_NORM, TORCH_SPEEDUP = 0.90, 0.85, 1.0, 1.5


def json_lines(command):
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


def device_name(device):
    if device == "cpu":
        return "the CPU (--device cpu: a check of the pipeline, not a GPU measurement)"
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version",
                               "--format=csv,noheader"], capture_output=True, text=True,
                              check=True).stdout.splitlines()[0]
    except (OSError, subprocess.CalledProcessError, IndexError):
        return "a CUDA device (nvidia-smi not found)"


def verdict(met):
    return "pass" if met else "**FAIL**"


def section(ours, theirs, arguments):
    def time(results, name, rows, hidden, pass_name):
        return results.get((name, rows, hidden, pass_name), {}).get("median_seconds")

    shapes = sorted({(r, h) for (_, r, h, _) in ours}, key=lambda s: (s[1], s[0]))
    lines = [BEGIN_MARKER, "", "## Normalisers on a GPU (float32; bench_norms_cuda)", "",
             f"- Date: {datetime.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %z')}",
             f"- Device: {device_name(arguments.device)}",
             f"- Library sources: {source_version(arguments.build_dir)}",
             f"- PyTorch: {theirs['version'] if theirs else 'not measured'}"]
    if arguments.quick:
        lines.append("- **Quick run** (`--quick`, shapes 64 times smaller): not a measurement")
    lines += ["", "GB/s counts the tensors a pass must move (forward: x and y; backward: x, dy and dx; "
              "both: five). The ceiling is the device's copy bandwidth in the same run (y.copy_(x)).", "",
              "| norm | rows × hidden | pass | median time | GB/s | of copy | goal | met |",
              "|---|---|---|---:|---:|---:|---|:---:|"]
    for rows, hidden in shapes:
        copy = ours[("copy", rows, hidden, "copy")]
        copy_rate = copy["bytes"] / copy["median_seconds"]
        lines.append(f"| copy (ceiling) | {rows}x{hidden} | copy | {copy['median_seconds'] * 1e3:.3f} ms | "
                     f"{copy_rate / 1e9:.0f} | 100% | — | — |")
        for name in NAMES:
            for pass_name in PASSES:
                result = ours[(name, rows, hidden, pass_name)]
                rate = result["bytes"] / result["median_seconds"]
                goal, met = "—", "—"
                if name == "rms_norm" and pass_name in ("forward", "backward"):
                    target = FORWARD_GOAL if pass_name == "forward" else BACKWARD_GOAL
                    goal, met = f"≥ {target:.0%} of copy", verdict(rate / copy_rate >= target)
                lines.append(f"| {NAMES[name]} | {rows}x{hidden} | {pass_name} | "
                             f"{result['median_seconds'] * 1e3:.3f} ms ±{result['cv']:.0%} | {rate / 1e9:.0f} | "
                             f"{rate / copy_rate:.0%} | {goal} | {met} |")
    header = " | ".join(f"{r}x{h}" for r, h in shapes)
    lines += ["", "Forward + backward, ratios of medians:", "",
              f"| comparison | {header} | goal | met |", "|---|" + "---:|" * len(shapes) + "---|:---:|"]

    def ratio_row(label, numerator, denominator, goal_text, ok):
        ratios = [numerator(r, h) / denominator(r, h) if numerator(r, h) and denominator(r, h) else None
                  for r, h in shapes]
        cells = [f"{x:.2f}×" if x else "—" for x in ratios]
        met = verdict(all(ok(x) for x in ratios if x)) if any(ratios) else "—"
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {goal_text} | {met} |")

    fb = "forward_backward"
    ratio_row("our LayerNorm time / our RMSNorm time", lambda r, h: time(ours, "layer_norm", r, h, fb),
              lambda r, h: time(ours, "rms_norm", r, h, fb), f"≥ {LAYER_NORM_OVER_RMS_NORM:.1f}×",
              lambda x: x >= LAYER_NORM_OVER_RMS_NORM)
    if theirs:
        ratio_row("torch.nn.LayerNorm time / our LayerNorm time",
                  lambda r, h: time(theirs["results"], "torch_layer_norm", r, h, fb),
                  lambda r, h: time(ours, "layer_norm", r, h, fb), f"≥ {TORCH_SPEEDUP}×", lambda x: x >= TORCH_SPEEDUP)
        ratio_row("torch.nn.RMSNorm time / our RMSNorm time",
                  lambda r, h: time(theirs["results"], "torch_rms_norm", r, h, fb),
                  lambda r, h: time(ours, "rms_norm", r, h, fb), f"≥ {TORCH_SPEEDUP}×", lambda x: x >= TORCH_SPEEDUP)
    command = f"python3 bench/run_cuda_norms.py {arguments.build_dir}"
    if arguments.repetitions is not None:
        command += f" --repetitions {arguments.repetitions}"
    if arguments.min_time is not None:
        command += f" --min-time {arguments.min_time}"
    lines += ["", f"Measured with `{command}`.", "", END_MARKER]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build_dir", type=pathlib.Path, help="a Release build directory")
    parser.add_argument("--results", type=pathlib.Path, default=HERE / "RESULTS.md")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--quick", action="store_true", help="shapes 64 times smaller, short repetitions")
    parser.add_argument("--no-torch", action="store_true", help="leave out the comparison with PyTorch")
    parser.add_argument("--no-write", action="store_true", help="print the table only")
    parser.add_argument("--repetitions", type=int, help="timed batches per measurement (both programs' default: 7)")
    parser.add_argument("--min-time", type=float, help="seconds per timed batch (default: 0.2)")
    arguments = parser.parse_args()
    flags = ["--device", arguments.device] + (["--quick"] if arguments.quick else [])
    if arguments.repetitions is not None:
        flags += ["--repetitions", str(arguments.repetitions)]
    if arguments.min_time is not None:
        flags += ["--min-time", str(arguments.min_time)]
    program = arguments.build_dir / "bench" / "bench_norms_cuda"
    ours = {(r["name"], r["rows"], r["hidden"], r["pass"]): r for r in json_lines([program, *flags])}
    theirs = None
    if not arguments.no_torch:
        try:
            version = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__)"],
                                     capture_output=True, text=True, check=True).stdout.strip()
            results = {(r["name"], r["rows"], r["hidden"], r["pass"]): r
                       for r in json_lines([sys.executable, TORCH_SCRIPT, *flags])}
            theirs = {"version": version, "results": results}
        except subprocess.CalledProcessError as error:
            print(f"PyTorch left out: {error.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
    text = section(ours, theirs, arguments)
    print(text)
    if not arguments.no_write:
        write_section(arguments.results, text, BEGIN_MARKER, END_MARKER)
        print(f"updated {arguments.results}", file=sys.stderr)


if __name__ == "__main__":
    main()
