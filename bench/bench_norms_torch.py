#!/usr/bin/env python3
"""Times PyTorch's normalisers on the CPU at the shapes of bench_norms, and prints JSON.

Usage: python3 bench/bench_norms_torch.py [--repetitions N] [--min-time SECONDS] [--threads T]

The reference for bench_norms.cpp: torch.nn.LayerNorm (gain and bias), torch.nn.RMSNorm (gain)
and RMSNorm composed the usual way, x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g,
all float32 with eps = 1e-5, on torch.set_num_threads(2) by default (the thread count
bench/run_benchmarks.py gives normgrad). The passes mirror bench_norms.cpp:
  forward           y = norm(x) with x requiring grad, so that the graph is recorded;
  backward          torch.autograd.grad(y, (x, gain[, bias]), dy, retain_graph=True) on a graph
                    recorded once: dx and the parameter gradients, with nothing accumulated
                    into .grad (a layer's dx goes on to the layer below);
  forward_backward  both.
Each pass is warmed up, then timed in REPETITIONS repetitions of a batch of iterations sized to
last about MIN-TIME seconds; the median of the per-iteration times is reported, with the
coefficient of variation of the repetitions. PyTorch is used only here, never by normgrad.
"""

import argparse
import json
import statistics
import time

import torch

SIZES = ((4096, 1024), (16384, 512), (2048, 4096), (65536, 256))
EPS = 1e-5
PASSES = ("forward", "backward", "forward_backward")


class ComposedRMSNorm(torch.nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * self.weight


VARIANTS = {
    "torch_layer_norm": lambda hidden: torch.nn.LayerNorm(hidden, eps=EPS),
    "torch_rms_norm": lambda hidden: torch.nn.RMSNorm(hidden, eps=EPS),
    "torch_rms_norm_composed": ComposedRMSNorm,
}


def make_step(module, pass_name, x, dy):
    """One iteration of the pass, as a function of no arguments."""
    inputs = (x, *module.parameters())
    if pass_name == "forward":
        return lambda: module(x)
    if pass_name == "backward":
        recorded = module(x)
        return lambda: torch.autograd.grad(recorded, inputs, dy, retain_graph=True)

    def forward_backward():
        return torch.autograd.grad(module(x), inputs, dy)

    return forward_backward


def time_step(step, repetitions, min_time):
    """Per-iteration seconds of each repetition, after a warm-up that also sizes the batch."""
    step()
    start = time.perf_counter()
    warm_up = 0
    while warm_up < 3 or time.perf_counter() - start < min_time / 2:
        step()
        warm_up += 1
    per_iteration = (time.perf_counter() - start) / warm_up
    batch = max(1, round(min_time / per_iteration))
    times = []
    for _ in range(repetitions):
        start = time.perf_counter()
        for _ in range(batch):
            step()
        times.append((time.perf_counter() - start) / batch)
    return times, batch


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--min-time", type=float, default=0.5,
                        help="seconds each repetition lasts, about (default 0.5)")
    parser.add_argument("--threads", type=int, default=2)
    arguments = parser.parse_args()

    torch.set_num_threads(arguments.threads)
    torch.manual_seed(1)
    results = []
    for rows, hidden in SIZES:
        x = torch.randn(rows, hidden, requires_grad=True)
        dy = torch.randn(rows, hidden)
        for variant, make in VARIANTS.items():
            module = make(hidden)
            for pass_name in PASSES:
                step = make_step(module, pass_name, x, dy)
                times, batch = time_step(step, arguments.repetitions, arguments.min_time)
                median = statistics.median(times)
                spread = statistics.pstdev(times) / statistics.mean(times) if len(times) > 1 else None
                results.append({
                    "name": f"{variant}/{pass_name}/{rows}x{hidden}", "variant": variant,
                    "pass": pass_name, "rows": rows, "hidden": hidden, "median_seconds": median,
                    "cv": spread, "iterations_per_repetition": batch, "seconds": times,
                })
    print(json.dumps({
        "torch_version": torch.__version__,
        "threads": torch.get_num_threads(),
        "repetitions": arguments.repetitions,
        "results": results,
    }, indent=1))


if __name__ == "__main__":
    main()
