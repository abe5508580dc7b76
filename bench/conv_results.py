"""The convolution and pooling section of bench/RESULTS.md, from the report of bench_conv
(Google Benchmark JSON). run_benchmarks.py runs the program and calls conv_section(). Python 3
standard library only."""

from report_helpers import format_median, medians

# bench_conv's layers, in the model's order: name -> what the row shows.
LAYERS = {
    "conv3x3_3to96_32px": "3x3, 3 → 96, 32×32 (the first layer)",
    "conv3x3_96to96_32px": "3x3, 96 → 96, 32×32",
    "conv3x3_192to192_16px": "3x3, 192 → 192, 16×16",
    "conv3x3_pad0_192to192_8px": "3x3 unpadded, 192 → 192, 8×8",
    "conv1x1_192to192_6px": "1x1, 192 → 192, 6×6",
}
POOL_PASSES = (("max_pool2d_forward", "forward"), ("max_pool2d_forward_backward", "forward + backward"))


def conv_table(results):
    lines = ["| layer (batch 32) | sgemm GFLOP/s (ceiling) | forward | GFLOP/s | of sgemm | "
             "forward + backward | GFLOP/s | of sgemm |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for layer, label in LAYERS.items():
        ceiling = results.get(f"sgemm/{layer}")
        forward = results.get(f"conv2d_forward/{layer}")
        both = results.get(f"conv2d_forward_backward/{layer}")
        if ceiling is None or forward is None or both is None:
            continue
        ceiling_rate = ceiling["flops"]
        lines.append(f"| {label} | {ceiling_rate / 1e9:.1f} | {format_median(forward)} | "
                     f"{forward['flops'] / 1e9:.1f} | {forward['flops'] / ceiling_rate:.0%} | "
                     f"{format_median(both)} | {both['flops'] / 1e9:.1f} | {both['flops'] / ceiling_rate:.0%} |")
    return lines


def pool_table(results):
    memcpy = next((entry for name, entry in results.items() if name.startswith("memcpy")), None)
    lines = ["| 2x2 max-pool, stride 2, [32, 96, 32, 32] | median time | GB/s | of memcpy |",
             "|---|---:|---:|---:|"]
    for op, label in POOL_PASSES:
        entry = results.get(f"{op}/2x2")
        if entry is None:
            continue
        rate = entry["bytes_per_second"]
        of_memcpy = f"{rate / memcpy['bytes_per_second']:.0%}" if memcpy else "—"
        lines.append(f"| {label} | {format_median(entry)} | {rate / 1e9:.1f} | {of_memcpy} |")
    if memcpy:
        lines.append(f"| memcpy, 1 thread (ceiling) | {format_median(memcpy)} | "
                     f"{memcpy['bytes_per_second'] / 1e9:.1f} | 100% |")
    return lines


def conv_section(report, run_lines):
    """The section's lines (without its markers): the run's machine lines, then the tables."""
    results = medians(report)
    lines = ["## Convolution and pooling (float32, the CIFAR model's layers; bench_conv)", ""]
    lines += run_lines
    lines += ["", "GFLOP/s count 2 N O K L flops for a forward pass (K = C kh kw, L = OH OW) and three "
              "times that for forward + backward; the ceiling is the forward pass's flops as one bare "
              "`cblas_sgemm` (OpenBLAS) over the whole batch in the same run; on CPUs with AVX-512, where "
              "normgrad's float32 GEMMs are its own (backends/cpu/gemm/sgemm_avx512.h), they can beat it. "
              "Pooling's bytes include the int64 indices.", ""]
    lines += conv_table(results)
    lines += [""]
    lines += pool_table(results)
    return lines
