#!/usr/bin/env python3
"""Times PyTorch's normalisers on a GPU at the shapes of bench_norms_cuda, and prints JSON.

Usage: python3 bench/bench_norms_cuda_torch.py [--device cuda|cpu] [--repetitions N]
                                               [--min-time SECONDS] [--quick]

The reference for bench_norms_cuda.cpp, with the same shapes, passes, timing and output:
torch.nn.LayerNorm (gain and bias) and torch.nn.RMSNorm (gain), float32, eps = 1e-5, and the
device's copy bandwidth through y.copy_(x). Backward is torch.autograd.grad(y, (x, *params), dy,
retain_graph=True) on a graph recorded once. --device cpu and --quick check the script on a
machine without a GPU. PyTorch is used only here, never by normgrad.
"""

import argparse
import json
import statistics
import time

import torch

SIZES = ((32768, 1024), (16384, 4096), (8192, 8192), (65536, 256))
EPS = 1e-5
VARIANTS = {
    "torch_layer_norm": lambda hidden: torch.nn.LayerNorm(hidden, eps=EPS),
    "torch_rms_norm": lambda hidden: torch.nn.RMSNorm(hidden, eps=EPS),
}


def wait(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_per_call(step, device, repetitions, min_time):
    """Median seconds per call of step() and the coefficient of variation of the repetitions."""
    for _ in range(3):
        step()
    wait(device)

    def seconds_of(calls):
        start = time.perf_counter()
        for _ in range(calls):
            step()
        wait(device)
        return time.perf_counter() - start

    calls = 1
    while seconds_of(calls) < min_time / 4 and calls < (1 << 20):
        calls *= 2
    calls = max(1, int(calls * min_time / max(seconds_of(calls), 1e-9)))
    per_call = [seconds_of(calls) / calls for _ in range(repetitions)]
    mean = statistics.fmean(per_call)
    return statistics.median(per_call), statistics.pstdev(per_call) / mean if mean > 0 else 0.0


def report(name, rows, hidden, pass_name, timing, bytes_moved):
    print(json.dumps({"name": name, "rows": rows, "hidden": hidden, "pass": pass_name,
                      "median_seconds": timing[0], "cv": timing[1], "bytes": bytes_moved}), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--repetitions", type=int, default=7)
    parser.add_argument("--min-time", type=float, default=0.2)
    parser.add_argument("--quick", action="store_true")
    arguments = parser.parse_args()
    repetitions, min_time = (2, 0.02) if arguments.quick else (arguments.repetitions, arguments.min_time)
    scale = 64 if arguments.quick else 1
    device = torch.device(arguments.device)
    torch.manual_seed(1)
    for rows, hidden in SIZES:
        rows //= scale
        x = torch.randn(rows, hidden, device=device, requires_grad=True)
        dy = torch.randn(rows, hidden, device=device)
        tensor_bytes = rows * hidden * 4
        copy = torch.empty_like(x)
        source = x.detach()
        report("torch_copy", rows, hidden, "copy",
               time_per_call(lambda: copy.copy_(source), device, repetitions, min_time), 2 * tensor_bytes)
        for name, make in VARIANTS.items():
            module = make(hidden).to(device)
            inputs = (x, *module.parameters())
            recorded = module(x)
            timings = {
                "forward": (lambda: module(x), 2),
                "backward": (lambda: torch.autograd.grad(recorded, inputs, dy, retain_graph=True), 3),
                "forward_backward": (lambda: torch.autograd.grad(module(x), inputs, dy), 5),
            }
            for pass_name, (step, tensors) in timings.items():
                report(name, rows, hidden, pass_name,
                       time_per_call(step, device, repetitions, min_time), tensors * tensor_bytes)


if __name__ == "__main__":
    main()
