#!/usr/bin/env python3
"""Times transformer_nmt's Transformer (training steps and decoding) against its PyTorch twin,
built from torch.nn's Transformer layers, on real batches of the corpus, and writes the tables
into bench/RESULTS.md (between the transformer-nmt markers), keeping the other sections.

Usage: python3 bench/run_transformer_nmt.py BUILD_DIR   (a Release build with the examples and
           bench_transformer_nmt; run it with a Python that imports torch, or pass --torch-python)
       python3 bench/run_transformer_nmt.py BUILD_DIR --quick   (a check of the pipeline)
       python3 bench/run_transformer_nmt.py BUILD_DIR --device cuda   (on a GPU: the base preset
           with the paper's batches of 25000 tokens, seconds per 1000 steps beside the paper's
           V100 column; its own section of RESULTS.md)

Presets: cpu (d 256, feed-forward 1024, 4 heads, 3 + 3 layers, vocabulary 8000, batches of
2000 tokens) and base (the paper's: d 512, 2048, 8 heads, 6 + 6 layers, vocabulary 32000),
base with batches of --base-batch-tokens (1000 by default: its own 25000 would take minutes a
step on 2 cores) and fewer steps. bench_transformer_nmt first writes each preset's batches (the
first 20 of the seeded training order), so that both sides train on the same token ids in the
same order. Then, in rounds, each run after waiting for an idle CPU, norm by norm (none,
layernorm, rmsnorm, prmsnorm:0.0625; post-norm): normgrad, then PyTorch twice, once as it comes
and once with glibc's malloc kept from returning memory to the system (MALLOC_MMAP_MAX_=0,
MALLOC_TRIM_THRESHOLD_=4294967296; PyTorch has no pRMSNorm); each comparison is held against
the faster of the two. Even rounds run in reverse order, so that the machine's drift over a
round falls on both sides alike. Last, decoding in normgrad: dev sentences with beam 4, through
the key/value cache and by recomputation. All on 2 threads. Times are the medians of all timed
steps over the rounds. Python 3 standard library only (PyTorch only inside the twin).

Goal: normgrad's step time at most PyTorch's (ratio of times <= 1.0) with the same norm, at
both presets.
"""

import argparse
import json
import os
import pathlib
import statistics
import sys

from report_helpers import verdict
from run_benchmarks import THREADS, run_once, run_rounds, twin_section_header, write_section
from run_cuda_norms import device_name

HERE = pathlib.Path(__file__).resolve().parent
TORCH_SCRIPT = HERE / "bench_transformer_nmt_torch.py"
MARKERS = {"cpu": ("<!-- transformer-nmt:begin -->", "<!-- transformer-nmt:end -->"),
           "cuda": ("<!-- transformer-nmt-cuda:begin -->", "<!-- transformer-nmt-cuda:end -->")}
# The paper's Table 4: seconds per 1000 steps of the base Transformer on a V100, batches of
# about 25000 tokens.
PAPER_V100 = {"none": 210, "layernorm": 248, "rmsnorm": 231, "prmsnorm:0.0625": 225}
PRESETS = ("cpu", "base")
PRESET_NAMES = {"cpu": "cpu (d256, FFN1024, 3+3, V8000)", "base": "base (d512, FFN2048, 6+6, V32000)"}
NORMS = ("none", "layernorm", "rmsnorm", "prmsnorm:0.0625")
TORCH_NORMS = ("none", "layernorm", "rmsnorm")
TORCH_VARIANTS = {"torch": {}, "torch-malloc": {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": "4294967296"}}


def torch_variants(device):
    """PyTorch's runs: on the CPU also with glibc's malloc kept (its default loses time to page
    faults there); on a GPU the tensors live in CUDA's caching allocator, so once is enough."""
    return TORCH_VARIANTS if device == "cpu" else {"torch": {}}
TIME_GOAL = 1.0  # normgrad's step time over PyTorch's


def batches_path(build_dir, preset):
    return build_dir / "bench" / f"transformer_nmt_batches_{preset}.safetensors"


def program(build_dir):
    executable = build_dir / "bench" / "bench_transformer_nmt"
    if not executable.exists():
        sys.exit(f"{executable} not found: build it with cmake --build {build_dir} --target "
                 "bench_transformer_nmt (NORMGRAD_BUILD_EXAMPLES=ON, NORMGRAD_BUILD_BENCH=ON, Release)")
    return executable


def preset_flags(arguments, preset):
    """What a preset's runs share on the normgrad side: the corpus, the preset, its batch size."""
    flags = ["--corpus", arguments.corpus, "--preset", preset, "--device", arguments.device]
    if preset == "base":
        flags += ["--batch-tokens", str(arguments.base_batch_tokens)]
    return flags


def step_counts(arguments, preset):
    if preset == "base":
        return ["--steps", str(arguments.base_steps), "--warmup", str(arguments.base_warmup)]
    return ["--steps", str(arguments.steps), "--warmup", str(arguments.warmup)]


def runs(arguments, presets):
    """(key, command, extra environment) of every run of a round; key is (kind, preset, name)."""
    executable = program(arguments.build_dir)
    for preset in presets:
        counts = step_counts(arguments, preset)
        for norm in NORMS:
            yield (("train", preset, f"normgrad {norm}"),
                   [executable, *preset_flags(arguments, preset), "--norm", norm, *counts], {})
            if norm not in TORCH_NORMS:
                continue
            for variant, extra in torch_variants(arguments.device).items():
                yield (("train", preset, f"{variant} {norm}"),
                       [arguments.torch_python, TORCH_SCRIPT, "--batches", batches_path(arguments.build_dir, preset),
                        "--preset", preset, "--norm", norm, "--threads", THREADS, "--device", arguments.device,
                        *counts], extra)
    yield (("decode", "cpu", "normgrad layernorm"),
           [executable, *preset_flags(arguments, "cpu"), "--decode", "--sentences", str(arguments.sentences),
            "--steps", "1", "--warmup", "0"], {})


def write_batches(arguments, presets):
    """The batches both sides train on (and the tokenizers, trained once, when absent)."""
    environment = dict(os.environ, OMP_NUM_THREADS=THREADS)
    for preset in presets:
        path = batches_path(arguments.build_dir, preset)
        print(f"writing the {preset} batches to {path}", file=sys.stderr, flush=True)
        run_once([program(arguments.build_dir), *preset_flags(arguments, preset), "--write-batches", path],
                 environment)


def step_summary(runs_of):
    """The median of every timed step of every run, the spread (max - min) / median, the count,
    and the median peak memory growth."""
    steps = [seconds for run in runs_of for seconds in run["step_seconds"]]
    median = statistics.median(steps)
    return {"median": median, "spread": (max(steps) - min(steps)) / median, "count": len(steps), "steps": steps,
            "rss": statistics.median(run["peak_rss_growth_bytes"] for run in runs_of),
            "tensors": statistics.median(run.get("peak_tensor_bytes", 0) for run in runs_of),
            "framework": runs_of[0]["framework"], "loss": runs_of[0]["losses"][0]}


def best_torch(results, preset, norm, device="cpu"):
    """The faster of PyTorch's runs with this norm (on the CPU: as it comes, malloc kept), and its
    name."""
    summaries = {variant: step_summary(results[f"train/{preset}/{variant} {norm}"])
                 for variant in torch_variants(device)}
    name = min(summaries, key=lambda variant: summaries[variant]["median"])
    return summaries[name], name


def paired_ratio(ours, theirs):
    """The median and quartiles of the per-step ratios of two runs' timed steps, which trained on
    the same batches in the same order: the batches' lengths cancel out."""
    ratios = [a / b for a, b in zip(ours["steps"], theirs["steps"])]
    if len(ratios) < 2:
        return f"{ratios[0]:.2f}" if ratios else "—"
    low, middle, high = statistics.quantiles(ratios, n=4)
    return f"{middle:.2f} ({low:.2f}–{high:.2f})"


def milliseconds(summary):
    return f"{summary['median'] * 1000:.0f} ms ±{summary['spread']:.0%} (n={summary['count']})"


def section(results, arguments, presets):
    def ours(preset, norm):
        return step_summary(results[f"train/{preset}/normgrad {norm}"])

    on_gpu = arguments.device == "cuda"
    title = "transformer_nmt (the Transformer) against PyTorch's nn.Transformer layers"
    lines = twin_section_header(
        MARKERS[arguments.device][0], title + (" on a GPU" if on_gpu else ""),
        arguments.build_dir, results[f"train/{presets[0]}/torch layernorm"][0]["framework"], results,
        f"{arguments.corpus} (scripts/build_corpus); the first 20 batches of the seeded training order (2000 "
        f"tokens a batch at cpu, {arguments.base_batch_tokens} at base), the same token ids on both sides",
        arguments.quick)
    if on_gpu:
        lines.append(f"- GPU: {device_name('cuda')}; both sides' models, batches and steps on cuda:0, float32 "
                     "without TF32; every step timed to a synchronisation")
    lines += ["", "One step: zero_grad, forward (post-norm, dropout 0.1, tied embeddings), cross-entropy with label "
              "smoothing 0.1 over the real target tokens, backward, the global gradient norm, Adam (β2 0.98; "
              "PyTorch's fused). Timed after untimed warm-up steps (a pass over the 20 batches at cpu). Step time: "
              "the median of all timed steps over the rounds (spread: (max - min) / median; batches differ in "
              "length). PyTorch's second run keeps glibc's freed memory (MALLOC_MMAP_MAX_=0 "
              "MALLOC_TRIM_THRESHOLD_=4294967296); each ratio is against the faster of its two runs. Peak memory: "
              "the peak resident set minus the resident set before the model was built. First loss: the first "
              "step's loss per target token. Per step: the median and quartiles of the ratios of the two "
              "sides' times on the same batch.", "",
              "| preset | norm | normgrad step | PyTorch step | PyTorch, malloc kept | normgrad / best PyTorch "
              f"| per step | goal ≤ {TIME_GOAL:.1f} | peak memory normgrad / PyTorch | first loss normgrad / PyTorch |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    if on_gpu:  # one PyTorch run, the memory in the allocators, and the paper's V100 beside ours
        lines[-2:] = ["| preset | norm | normgrad step | PyTorch step | normgrad / PyTorch | per step "
                      f"| goal ≤ {TIME_GOAL:.1f} | s / 1k steps: normgrad, PyTorch, the paper's V100 "
                      "| peak tensor memory normgrad / PyTorch | first loss normgrad / PyTorch |",
                      "|---|---|---|---|---|---|---|---|---|---|"]
    for preset in presets:
        for norm in TORCH_NORMS:
            mine = ours(preset, norm)
            best, _ = best_torch(results, preset, norm, arguments.device)
            ratio = mine["median"] / best["median"]
            cells = [f"| {PRESET_NAMES[preset]}", norm, milliseconds(mine)]
            if on_gpu:
                paper = PAPER_V100[norm] if preset == "base" else None
                cells += [milliseconds(best), f"{ratio:.2f}", paired_ratio(mine, best), verdict(ratio <= TIME_GOAL),
                          f"{mine['median'] * 1000:.0f}, {best['median'] * 1000:.0f}, "
                          + (f"{paper}" if paper else "—"),
                          f"{mine['tensors'] / (1 << 20):.0f} / {best['tensors'] / (1 << 20):.0f} MiB"]
            else:
                plain = step_summary(results[f"train/{preset}/torch {norm}"])
                kept = step_summary(results[f"train/{preset}/torch-malloc {norm}"])
                cells += [milliseconds(plain), milliseconds(kept), f"{ratio:.2f}", paired_ratio(mine, best),
                          verdict(ratio <= TIME_GOAL),
                          f"{mine['rss'] / (1 << 20):.0f} / {best['rss'] / (1 << 20):.0f} MiB"]
            lines.append(" | ".join(cells + [f"{mine['loss']:.3f} / {best['loss']:.3f} |"]))
    lines += ["", "Each norm's cost: its step time over the step time without norms, in the same round (every norm "
              "slot of the model filled: two per encoder layer, three per decoder layer).", "",
              "| preset | side | " + " | ".join(NORMS) + " |", "|---|---|" + "---|" * len(NORMS)]
    for preset in presets:
        base = ours(preset, "none")["median"]
        cells = [f"{ours(preset, norm)['median'] / base - 1:+.1%}" if norm != "none" else
                 f"{base * 1000:.0f} ms" for norm in NORMS]
        lines.append(f"| {PRESET_NAMES[preset]} | normgrad | " + " | ".join(cells) + " |")
        torch_none = best_torch(results, preset, "none", arguments.device)[0]["median"]
        cells = []
        for norm in NORMS:
            if norm not in TORCH_NORMS:
                cells.append("—")
            elif norm == "none":
                cells.append(f"{torch_none * 1000:.0f} ms")
            else:
                torch_norm = best_torch(results, preset, norm, arguments.device)[0]["median"]
                cells.append(f"{torch_norm / torch_none - 1:+.1%}")
        lines.append(f"| {PRESET_NAMES[preset]} | PyTorch (best of two) | " + " | ".join(cells) + " |")
    decode = results["decode/cpu/normgrad layernorm"][0]
    cached, uncached = decode["cached"], decode["uncached"]
    lines += ["", f"Decoding in normgrad (cpu preset, layernorm, {decode['sentences']} dev sentences, beam "
              f"{decode['beam']}, 32 sentences a batch): sentences per second through the key/value cache and by "
              "recomputing the prefix at every step. The weights are untrained (the seeded initialisation), so "
              "hypotheses run to the limit transformer_nmt translate sets, 2 x source length + 10 subwords; the "
              "mean output length is given beside the rate.", "",
              "| search | sentences/s | mean output subwords |", "|---|---|---|",
              f"| cached | {cached['sentences_per_second']:.1f} | {cached['mean_output_subwords']:.1f} |",
              f"| uncached | {uncached['sentences_per_second']:.1f} | {uncached['mean_output_subwords']:.1f} |",
              f"| cached / uncached | {cached['sentences_per_second'] / uncached['sentences_per_second']:.1f}x | |"]
    flags = (" --device cuda" if on_gpu else "") + (" --quick" if arguments.quick else "")
    lines += ["", f"Measured with `python3 bench/run_transformer_nmt.py {arguments.build_dir}{flags}`.", "",
              MARKERS[arguments.device][1]]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build_dir", type=pathlib.Path, help="a Release build directory")
    parser.add_argument("--corpus", type=pathlib.Path, default=HERE.parent / "out" / "corpus" / "debian-en-de")
    parser.add_argument("--results", type=pathlib.Path, default=HERE / "RESULTS.md")
    parser.add_argument("--presets", default=",".join(PRESETS), help="comma-separated: cpu,base")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--steps", type=int, default=20, help="timed steps per run (cpu)")
    parser.add_argument("--warmup", type=int, default=20,
                        help="untimed steps first (cpu; 20: one pass over the batches, so that both sides' "
                             "allocators hold memory for the longest batch before the timing starts)")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                        help="cuda: the base preset on a GPU, the paper's batches, its own section")
    parser.add_argument("--base-batch-tokens", type=int,
                        help="tokens a base batch (default: 1000 on the CPU, the paper's 25000 on a GPU)")
    parser.add_argument("--base-steps", type=int, help="timed base steps per run (default: 5; 20 on a GPU)")
    parser.add_argument("--base-warmup", type=int, help="untimed base steps first (default: 3; 5 on a GPU)")
    parser.add_argument("--sentences", type=int, default=100, help="dev sentences to translate")
    parser.add_argument("--torch-python", default=sys.executable, help="a Python that imports torch")
    parser.add_argument("--from-saved", action="store_true",
                        help="run nothing: rebuild the tables from the last run's results in BUILD_DIR/bench")
    parser.add_argument("--no-write", action="store_true", help="print the tables only")
    parser.add_argument("--quick", action="store_true", help="1 round of 1 step, 8 sentences, no waiting")
    arguments = parser.parse_args()
    on_gpu = arguments.device == "cuda"
    if on_gpu and arguments.presets == ",".join(PRESETS):
        arguments.presets = "base"
    for name, cpu_default, gpu_default in (("base_batch_tokens", 1000, 25000), ("base_steps", 5, 20),
                                           ("base_warmup", 3, 5)):
        if getattr(arguments, name) is None:
            setattr(arguments, name, gpu_default if on_gpu else cpu_default)
    presets = tuple(preset for preset in arguments.presets.split(",") if preset)
    if not presets or not set(presets) <= set(PRESETS):
        parser.error(f"--presets: some of {', '.join(PRESETS)}")
    if arguments.quick:
        arguments.rounds, arguments.steps, arguments.warmup, arguments.sentences = 1, 1, 0, 8
        arguments.base_steps, arguments.base_warmup = 1, 0
    saved = arguments.build_dir / "bench" / f"transformer_nmt_results{'_cuda' if on_gpu else ''}.json"
    if arguments.from_saved:
        results = json.loads(saved.read_text())
    else:
        write_batches(arguments, presets)
        results = run_rounds(list(runs(arguments, presets)), arguments.rounds, arguments.quick,
                             dict(os.environ, OMP_NUM_THREADS=THREADS))
        saved.write_text(json.dumps(results, indent=1))
    text = section(results, arguments, presets)
    print(text)
    if not arguments.no_write:
        write_section(arguments.results, text, *MARKERS[arguments.device])
        print(f"updated {arguments.results}", file=sys.stderr)


if __name__ == "__main__":
    main()
