"""The normalisers' section of bench/RESULTS.md, from the reports of bench_norms (Google
Benchmark JSON) and bench_norms_torch.py (its own JSON, or None when PyTorch is not there).
run_benchmarks.py runs both and calls norm_section(). Python 3 standard library only."""

from report_helpers import format_median, format_time, medians, seconds, verdict

SIZES = ("4096x1024", "16384x512", "2048x4096", "65536x256")
PASSES = (("forward", "forward"), ("backward", "backward"), ("forward_backward", "fwd+bwd"))
VARIANTS = (("layer_norm", "LayerNorm (gain, bias)"), ("rms_norm", "RMSNorm (gain)"),
            ("partial_rms_norm", "pRMSNorm (gain, p = 6.25%)"))
TORCH_VARIANTS = (("torch_layer_norm", "torch.nn.LayerNorm"), ("torch_rms_norm", "torch.nn.RMSNorm"),
                  ("torch_rms_norm_composed", "composed: x * rsqrt(mean(x²) + eps) * g"))

# Goals. RMSNorm's bandwidth as a fraction of the triad's, on shapes whose tensors do not fit
# in the last-level cache; fwd+bwd speed-ups (time of the other / time of ours); pRMSNorm's
# time within a band around RMSNorm's.
RMS_FORWARD_MIN_TRIAD = 0.80
RMS_BACKWARD_MIN_TRIAD = 0.70
RMS_OVER_LAYER_NORM_MIN = 1.2
RMS_OVER_LAYER_NORM_AT = "4096x1024"
OVER_TORCH_MIN = 2.0
OVER_COMPOSED_MIN = 10.0
PARTIAL_MAX_DIFFERENCE = 0.05


def last_level_cache_bytes(context):
    sizes = [cache["size"] for cache in context.get("caches", []) if cache.get("type") != "Instruction"]
    return max(sizes, default=32 << 20)


def dram_sized(size, cache_bytes):
    """True when one [rows, hidden] float32 tensor is at least the last-level cache, so that a
    pass (two or three such tensors) streams from memory."""
    rows, hidden = (int(value) for value in size.split("x"))
    return rows * hidden * 4 >= cache_bytes


def torch_entries(torch_report):
    """The PyTorch report's medians, shaped like Google Benchmark's for format_median()."""
    if torch_report is None:
        return {}
    return {result["name"]: {"real_time": result["median_seconds"], "time_unit": "s", "spread": result["cv"]}
            for result in torch_report["results"]}


def bandwidth_goal(variant, pass_name, size, cache_bytes):
    """(goal text, minimum fraction of the triad) for this row, or None when it has no goal."""
    if variant != "rms_norm" or pass_name not in ("forward", "backward"):
        return None
    minimum = RMS_FORWARD_MIN_TRIAD if pass_name == "forward" else RMS_BACKWARD_MIN_TRIAD
    if not dram_sized(size, cache_bytes):
        return ("— (fits in cache)", None)
    return (f"≥ {minimum:.0%} of triad", minimum)


def timing_table(ours, triad_rate, cache_bytes):
    lines = ["| norm | rows × hidden | pass | median time | GB/s | of triad | goal | met |",
             "|---|---|---|---:|---:|---:|---|:---:|"]
    rows = [(variant, label, size) for size in SIZES for variant, label in VARIANTS]
    rows.append(("rms_norm_composed", "RMSNorm composed from primitive ops", "4096x1024"))
    for variant, label, size in rows:
        for pass_name, pass_label in PASSES:
            entry = ours.get(f"{variant}/{pass_name}/{size}")
            if entry is None:
                continue
            rate = entry["bytes_per_second"]
            goal, met = "—", "—"
            found = bandwidth_goal(variant, pass_name, size, cache_bytes)
            if found is not None:
                goal, minimum = found
                if minimum is not None:
                    met = verdict(rate / triad_rate >= minimum)
            lines.append(f"| {label} | {size} | {pass_label} | {format_median(entry)} | {rate / 1e9:.1f} | "
                         f"{rate / triad_rate:.0%} | {goal} | {met} |")
    return lines


def torch_table(theirs):
    lines = ["| PyTorch | rows × hidden | forward | backward | fwd+bwd |", "|---|---|---:|---:|---:|"]
    for variant, label in TORCH_VARIANTS:
        for size in SIZES:
            cells = [theirs.get(f"{variant}/{pass_name}/{size}") for pass_name, _ in PASSES]
            lines.append(f"| {label} | {size} | "
                         + " | ".join(format_median(cell) if cell else "—" for cell in cells) + " |")
    return lines


def ratio(numerator, denominator):
    return None if numerator is None or denominator is None else seconds(numerator) / seconds(denominator)


def comparison_table(ours, theirs, have_torch):
    """Speed-ups at fwd+bwd (time of the other over time of ours) and pRMSNorm's difference."""
    def entry(table, variant, pass_name, size):
        return table.get(f"{variant}/{pass_name}/{size}")

    lines = ["| comparison | " + " | ".join(SIZES) + " | goal | met |",
             "|---|" + "---:|" * len(SIZES) + "---|:---:|"]

    def speed_up_row(label, slow, fast, minimum, goal_sizes, goal_text, slow_table=ours):
        values = {size: ratio(entry(slow_table, slow, "forward_backward", size),
                              entry(ours, fast, "forward_backward", size)) for size in SIZES}
        cells = ["—" if values[size] is None else f"{values[size]:.2f}×" for size in SIZES]
        checked = [size for size in goal_sizes if values[size] is not None]
        failed = [size for size in checked if values[size] < minimum]
        met = "—" if not checked else "pass" if not failed else f"**FAIL** ({', '.join(failed)})"
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {goal_text} | {met} |")

    speed_up_row("RMSNorm over our LayerNorm, fwd+bwd", "layer_norm", "rms_norm", RMS_OVER_LAYER_NORM_MIN,
                 [RMS_OVER_LAYER_NORM_AT], f"≥ {RMS_OVER_LAYER_NORM_MIN}× at {RMS_OVER_LAYER_NORM_AT}")
    speed_up_row("RMSNorm over our composed RMSNorm, fwd+bwd", "rms_norm_composed", "rms_norm", 0, [], "—")
    if have_torch:
        speed_up_row("our RMSNorm over torch.nn.LayerNorm, fwd+bwd", "torch_layer_norm", "rms_norm",
                     OVER_TORCH_MIN, SIZES, f"≥ {OVER_TORCH_MIN:g}×", theirs)
        speed_up_row("our RMSNorm over torch.nn.RMSNorm, fwd+bwd", "torch_rms_norm", "rms_norm",
                     OVER_TORCH_MIN, SIZES, f"≥ {OVER_TORCH_MIN:g}×", theirs)
        speed_up_row("our RMSNorm over PyTorch composed RMSNorm, fwd+bwd", "torch_rms_norm_composed",
                     "rms_norm", OVER_COMPOSED_MIN, SIZES, f"≥ {OVER_COMPOSED_MIN:g}×", theirs)
        speed_up_row("our LayerNorm over torch.nn.LayerNorm, fwd+bwd (for reference)", "torch_layer_norm",
                     "layer_norm", 0, [], "—", theirs)
    else:
        lines.append("| against PyTorch | " + " | ".join("—" for _ in SIZES)
                     + " | — | — (PyTorch not run) |")
    # pRMSNorm against RMSNorm from the paired benchmark: the median over pairs of the ratio of
    # their times, each pair run back to back (see bench_norms.cpp, partial_over_full).
    for pass_name, pass_label in PASSES:
        values = {}
        for size in SIZES:
            paired = entry(ours, "partial_over_full", pass_name, size + "/manual_time")
            values[size] = None if paired is None else paired["partial_over_full"]
        cells = ["—" if values[size] is None else f"{values[size] - 1:+.1%}" for size in SIZES]
        failed = [size for size in SIZES if values[size] is not None and abs(values[size] - 1) > PARTIAL_MAX_DIFFERENCE]
        met = "pass" if not failed else f"**FAIL** ({', '.join(failed)})"
        lines.append(f"| pRMSNorm time vs RMSNorm, {pass_label} (paired) | " + " | ".join(cells)
                     + f" | within ±{PARTIAL_MAX_DIFFERENCE:.0%} | {met} |")
    return lines


def norm_section(norm_report, torch_report, run_lines):
    """The section's lines: `run_lines` (date, machine, sources) first, then the tables."""
    ours = medians(norm_report)
    theirs = torch_entries(torch_report)
    triad = next(entry for name, entry in ours.items() if name.startswith("triad/"))
    memcpy = next(entry for name, entry in ours.items() if name.startswith("memcpy/"))
    cache_bytes = last_level_cache_bytes(norm_report["context"])
    triad_rate = triad["bytes_per_second"]
    lines = ["## Normalisers (float32, through the modules; bench_norms and bench_norms_torch.py)", ""]
    lines += run_lines
    lines += [
        "",
        f"Ceilings in the same run: STREAM triad {triad_rate / 1e9:.1f} GB/s ({format_time(seconds(triad))} "
        f"±{triad['spread'] or 0:.0%}), memcpy on one thread {memcpy['bytes_per_second'] / 1e9:.1f} GB/s. "
        "GB/s counts the tensors a pass must move: forward reads x and writes y, backward reads x and dy "
        "and writes dx, fwd+bwd both. Backward is the norm's own backward node (the fused kernel and the "
        "allocation of dx), as in a network, where dx goes on to the layer below. Bandwidth goals apply "
        f"where one tensor is at least the last-level cache ({cache_bytes >> 20} MiB).",
        "",
    ]
    lines += timing_table(ours, triad_rate, cache_bytes)
    lines += ["", "Speed-ups at fwd+bwd are the other's time over ours; pRMSNorm's rows are its time "
              "relative to RMSNorm's (negative: faster): the median, over pairs of passes run back to back, "
              "of the ratio of their times.", ""]
    lines += comparison_table(ours, theirs, torch_report is not None)
    if torch_report is not None:
        lines += ["", f"PyTorch {torch_report['torch_version']} on {torch_report['threads']} threads, "
                  f"medians of {torch_report['repetitions']} repetitions after warm-up:", ""]
        lines += torch_table(theirs)
    return lines
