#!/usr/bin/env python3
"""Runs normgrad's benchmark programs and writes the results tables into bench/RESULTS.md.

Usage: python3 bench/run_benchmarks.py BUILD_DIR   (a Release build, e.g. build/bench-rel)
       python3 bench/run_benchmarks.py BUILD_DIR --only bench_norms   (the normalisers alone)
       python3 bench/run_benchmarks.py BUILD_DIR --only bench_conv    (convolution alone)

Each program runs with 5 repetitions in random interleaved order, and only the medians are
kept. Every normgrad result is compared with a ceiling measured in the same run: raw
cblas_sgemm for matmul, memcpy (and the STREAM triad) for the memory-bound ops and the
normalisers. When PyTorch imports, bench_norms_torch.py times PyTorch's normalisers beside
bench_norms. The goals are checked against those ratios and shown as pass/fail columns.
RESULTS.md has three sections, each between its own markers: the first three programs', the
normalisers' (norm_results.py), and convolution and pooling's (conv_results.py), so that each
can be measured again alone. Python 3 standard
library only (PyTorch only inside bench_norms_torch.py).
"""

import argparse
import datetime
import json
import os
import pathlib
import platform
import resource
import subprocess
import sys
import time

from conv_results import conv_section
from norm_results import norm_section
from report_helpers import format_median, medians, seconds, verdict

MAIN_PROGRAMS = ("bench_matmul", "bench_elementwise", "bench_overhead")
NORM_PROGRAM = "bench_norms"
CONV_PROGRAM = "bench_conv"
PROGRAMS = (*MAIN_PROGRAMS, NORM_PROGRAM, CONV_PROGRAM)
TORCH_SCRIPT = pathlib.Path(__file__).resolve().parent / "bench_norms_torch.py"
TORCH_REPORT = "bench_norms_torch"
BENCHMARK_FLAGS = (
    "--benchmark_format=json",
    "--benchmark_repetitions=5",
    "--benchmark_report_aggregates_only=true",
    # Repetitions of all benchmarks in a program run in random order, so that a slow spell on
    # a shared machine hits a baseline and the ops it is compared with alike.
    "--benchmark_enable_random_interleaving=true",
)
# --quick: a check that the pipeline works, not a measurement (the later flags win).
QUICK_FLAGS = ("--benchmark_repetitions=2", "--benchmark_min_time=0.1")
QUICK_TORCH_FLAGS = ("--repetitions", "2", "--min-time", "0.1")
THREADS = "2"
# On a shared machine, each program waits for the CPU to be idle, and is run again (at most
# MAX_ATTEMPTS times in all) when other processes took more than this share of the CPU time
# while it ran.
MAX_FOREIGN_SHARE = 0.03
MAX_ATTEMPTS = 5
IDLE_WAIT_SECONDS = 600

BEGIN_MARKER = "<!-- results:begin -->"
END_MARKER = "<!-- results:end -->"
NORMS_BEGIN_MARKER = "<!-- norms:begin -->"
NORMS_END_MARKER = "<!-- norms:end -->"
CONV_BEGIN_MARKER = "<!-- conv:begin -->"
CONV_END_MARKER = "<!-- conv:end -->"

# Goals. Matmul: time over raw sgemm at most 5% above it for n >= 512. Memory-bound ops:
# bytes per second (read + write) as a fraction of memcpy's.
MATMUL_MAX_OVERHEAD = 0.05
MATMUL_GOAL_FROM = 512
CONTIGUOUS_MIN_FRACTION = 0.70
BROADCAST_MIN_FRACTION = 0.50
TINY_OP_MAX_SECONDS = 2e-6

# The elementwise program's benchmarks: name -> (what it is, goal kind).
# Goal kinds: "baseline" (a reference measured in the same run), "contiguous", "broadcast",
# or None (shown, no goal).
ELEMENTWISE_ROWS = {
    "memcpy": ("memcpy, 1 thread (ceiling)", "baseline"),
    "memcpy_2_threads": ("memcpy split over 2 threads", "baseline"),
    "triad": ("STREAM triad a = b + s*c, 2 threads (ceiling)", "baseline"),
    "memcpy_fresh_destination": ("memcpy into a fresh plain malloc (page-fault cost)", "baseline"),
    "add": ("add a + b", "contiguous"),
    "add_inplace": ("a.add_(b), in place: add without the allocation", None),
    "mul_broadcast_row": ("mul [4096, 4096] * [4096] (broadcast row)", "broadcast"),
    "exp": ("exp", "contiguous"),
    "relu": ("relu", "contiguous"),
    "sum_all": ("sum over all elements", "contiguous"),
    "sum_last_dim": ("sum over dim -1 (rows)", "contiguous"),
    "sum_dim0": ("sum over dim 0 (columns)", "contiguous"),
    "softmax_last_dim": ("softmax over dim -1", "contiguous"),
}

OVERHEAD_ROWS = {
    "add": ("a + b, no autograd", True),
    "add_grad": ("a + b, requires_grad (graph recorded)", True),
    "add_sum_backward": ("(a + b).sum().backward(), whole step", False),
    "exp": ("exp(a), no autograd", True),
    "add_profiled": ("a + b, no autograd, with a profile open", True),
}


def busy_seconds():
    """CPU seconds the whole machine has spent busy since boot (steal time included)."""
    fields = pathlib.Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(value) for value in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def children_seconds():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def wait_until_idle():
    """Waits (at most IDLE_WAIT_SECONDS) until other processes use under MAX_FOREIGN_SHARE of
    the CPU over a two-second sample, so that a run does not start in the middle of a build."""
    deadline = time.monotonic() + IDLE_WAIT_SECONDS
    while True:
        before = busy_seconds()
        time.sleep(2.0)
        share = (busy_seconds() - before) / (2.0 * (os.cpu_count() or 1))
        if share <= MAX_FOREIGN_SHARE or time.monotonic() > deadline:
            return
        print(f"  waiting: other processes are using {share:.0%} of the CPU", file=sys.stderr, flush=True)
        time.sleep(8.0)


def run_once(command, environment):
    """Runs a command; returns its JSON output and the share of the machine's CPU time that
    went to other processes meanwhile (0 on an otherwise idle machine)."""
    busy_before, own_before, start = busy_seconds(), children_seconds(), time.monotonic()
    completed = subprocess.run([str(part) for part in command], env=environment,
                               stdout=subprocess.PIPE, check=True)
    wall = time.monotonic() - start
    foreign = (busy_seconds() - busy_before) - (children_seconds() - own_before)
    return completed.stdout, max(foreign, 0.0) / (wall * (os.cpu_count() or 1))


def run_rounds(plan, rounds, quick, environment):
    """Runs every (key, command, extra environment) of `plan` once per round, each after
    waiting for an idle CPU (not with quick): in order in odd rounds, in reverse in even ones,
    so that a machine that drifts slower or faster over a round weighs on both ends of the plan
    alike. Returns the JSON reports by "/".join(key), a list per key, each with the other
    processes' CPU share during the run."""
    results = {}
    for round_index in range(rounds):
        for key, command, extra in (plan if round_index % 2 == 0 else reversed(plan)):
            if not quick:
                wait_until_idle()
            print(f"  round {round_index + 1}/{rounds}: {' '.join(key)}", file=sys.stderr, flush=True)
            output, foreign = run_once(command, dict(environment, **extra))
            result = json.loads(output)
            result["foreign_cpu_share"] = foreign
            results.setdefault("/".join(key), []).append(result)
    return results


def run_measured(name, command, quick):
    """Runs a benchmark command with OMP_NUM_THREADS=THREADS; returns its JSON report. A run
    during which other processes took a noticeable share of the CPU is repeated, up to
    MAX_ATTEMPTS times, and the quietest attempt is kept; its share is recorded in the report.
    A quick run neither waits nor repeats."""
    environment = dict(os.environ, OMP_NUM_THREADS=THREADS)
    best = None
    attempts = 1 if quick else MAX_ATTEMPTS
    for attempt in range(1, attempts + 1):
        if not quick:
            wait_until_idle()
        print(f"running {name} (attempt {attempt}) ...", file=sys.stderr, flush=True)
        output, foreign_share = run_once(command, environment)
        if best is None or foreign_share < best[1]:
            best = (output, foreign_share)
        if foreign_share <= MAX_FOREIGN_SHARE:
            break
        print(f"  other processes used {foreign_share:.0%} of the CPU meanwhile"
              + ("; repeating" if attempt < attempts else ""), file=sys.stderr, flush=True)
    output, foreign_share = best
    report = json.loads(output)
    report["foreign_cpu_share"] = foreign_share
    report["quick"] = quick
    return report


def run_program(build_dir, program, quick):
    """Runs one benchmark program; returns its JSON report (also saved beside the binary)."""
    executable = build_dir / "bench" / program
    if not executable.exists():
        sys.exit(f"{executable} not found: build with "
                 f"cmake --build {build_dir} (NORMGRAD_BUILD_BENCH=ON, a Release build)")
    report = run_measured(program, [executable, *BENCHMARK_FLAGS, *(QUICK_FLAGS if quick else ())], quick)
    report_path(build_dir, program).write_text(json.dumps(report, indent=1))
    return report


def torch_available():
    return subprocess.run([sys.executable, "-c", "import torch"], capture_output=True).returncode == 0


def run_torch(build_dir, quick):
    """Runs bench_norms_torch.py when PyTorch imports; returns its report (saved beside the
    programs' reports), or None."""
    if not torch_available():
        print("PyTorch does not import: the norm tables leave out the comparison with it",
              file=sys.stderr)
        return None
    report = run_measured(TORCH_SCRIPT.name, [sys.executable, TORCH_SCRIPT, *(QUICK_TORCH_FLAGS if quick else ())],
                          quick)
    report_path(build_dir, TORCH_REPORT).write_text(json.dumps(report, indent=1))
    return report


def report_path(build_dir, program):
    return build_dir / "bench" / f"{program}.json"


def split_name(name):
    op, _, size = name.partition("/")
    return op, size


def matmul_table(results):
    lines = [
        "| op | n | median time | GFLOP/s | raw sgemm GFLOP/s | normgrad / sgemm | overhead | "
        f"goal: overhead < {MATMUL_MAX_OVERHEAD:.0%} at n ≥ {MATMUL_GOAL_FROM} |",
        "|---|---:|---:|---:|---:|---:|---:|:---:|",
    ]
    pairs = []
    for name in results:
        op, size = split_name(name)
        if op == "matmul":
            pairs.append(("matmul(a, b)", name, f"sgemm/{size}", int(size), True))
        elif op == "matmul_transposed_a":
            pairs.append(("matmul(a.t(), b)", name, f"sgemm_transposed_a/{size}", int(size), True))
        elif op == "matmul_transposed_a_copied":
            pairs.append(("matmul(a.t().contiguous(), b)", name, f"sgemm_transposed_a/{size}",
                          int(size), False))
    for label, name, baseline_name, n, has_goal in pairs:
        entry, baseline = results[name], results.get(baseline_name)
        gflops = entry["flops"] / 1e9
        if baseline is None:
            lines.append(f"| {label} | {n} | {format_median(entry)} | {gflops:.1f} | — | — | — | — |")
            continue
        baseline_gflops = baseline["flops"] / 1e9
        overhead = seconds(entry) / seconds(baseline) - 1.0
        goal = "—"
        if has_goal and n >= MATMUL_GOAL_FROM:
            goal = verdict(overhead < MATMUL_MAX_OVERHEAD)
        lines.append(f"| {label} | {n} | {format_median(entry)} | {gflops:.1f} | "
                     f"{baseline_gflops:.1f} | {gflops / baseline_gflops:.2f} | {overhead:+.1%} | {goal} |")
    return lines


def elementwise_table(results):
    def rate(op):
        return next((entry["bytes_per_second"] for name, entry in results.items()
                     if split_name(name)[0] == op), None)

    memcpy_rate, triad_rate = rate("memcpy"), rate("triad")
    lines = [
        "| op | size | median time | GB/s | vs memcpy | vs triad | goal | met |",
        "|---|---|---:|---:|---:|---:|---|:---:|",
    ]
    for name in results:
        op, size = split_name(name)
        label, kind = ELEMENTWISE_ROWS.get(op, (op, None))
        entry = results[name]
        bytes_per_second = entry["bytes_per_second"]
        to_memcpy = bytes_per_second / memcpy_rate
        goal, met = "—", "—"
        if kind == "contiguous":
            goal, met = f"≥ {CONTIGUOUS_MIN_FRACTION:.0%} of memcpy", verdict(to_memcpy >= CONTIGUOUS_MIN_FRACTION)
        elif kind == "broadcast":
            goal, met = f"≥ {BROADCAST_MIN_FRACTION:.0%} of memcpy", verdict(to_memcpy >= BROADCAST_MIN_FRACTION)
        elif kind == "baseline":
            goal = "ceiling" if op in ("memcpy", "triad") else "reference"
        lines.append(f"| {label} | {size} | {format_median(entry)} | {bytes_per_second / 1e9:.1f} | "
                     f"{to_memcpy:.0%} | {bytes_per_second / triad_rate:.0%} | {goal} | {met} |")
    return lines


def overhead_table(results):
    lines = [
        f"| op | size | median time | goal: < {TINY_OP_MAX_SECONDS * 1e6:.0f} µs per op | met |",
        "|---|---|---:|---|:---:|",
    ]
    for name, entry in results.items():
        op, size = split_name(name)
        label, has_goal = OVERHEAD_ROWS.get(op, (op, False))
        time = seconds(entry)
        goal, met = ("< 2 µs", verdict(time < TINY_OP_MAX_SECONDS)) if has_goal else ("— (several ops)", "—")
        lines.append(f"| {label} | {size} elements | {format_median(entry)} | {goal} | {met} |")
    return lines


def cpu_model():
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def source_dir(build_dir):
    """The source tree a CMake build directory was configured from."""
    try:
        for line in (build_dir / "CMakeCache.txt").read_text().splitlines():
            if line.startswith("CMAKE_HOME_DIRECTORY:"):
                return pathlib.Path(line.split("=", 1)[1])
    except OSError:
        pass
    return pathlib.Path(__file__).resolve().parent.parent


def source_version(build_dir):
    """The commit the measured library's sources are at, and whether they differ from it
    (changes under bench/ do not count: they do not touch the library)."""
    root = source_dir(build_dir)
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True,
                                text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", ".", ":(exclude)bench"], cwd=root,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return f"commit {commit}" + (", with uncommitted changes to the library" if dirty else ", clean")


def measured_at(context):
    """When the run started, from the report's own context (ISO 8601)."""
    try:
        return datetime.datetime.fromisoformat(context["date"]).strftime("%Y-%m-%d %H:%M %z")
    except (KeyError, ValueError):
        return "unknown"


def machine_lines(reports, first):
    """Date, machine and sources of a run of `reports` (name -> report, None for one that did
    not run); `first` names the report that gives the date and the machine's description."""
    context = reports[first]["context"]
    l3 = [cache["size"] for cache in context.get("caches", []) if cache.get("level") == 3]
    ran = {name: report for name, report in reports.items() if report is not None}
    foreign = ", ".join(f"{name} {report['foreign_cpu_share']:.1%}" for name, report in ran.items())
    lines = [
        f"- Date: {measured_at(context)}",
        f"- CPU: {cpu_model()}, {os.cpu_count()} cores at {context.get('mhz_per_cpu', '?')} MHz"
        + (f", L3 {l3[0] // (1 << 20)} MiB" if l3 else ""),
    ]
    if "openblas" in context:
        lines.append(f"- BLAS: {context['openblas'].strip()}")
    lines += [
        f"- Threads: OMP_NUM_THREADS={THREADS} (normgrad's loops and OpenBLAS alike)",
        f"- CPU time taken by other processes while each program ran: {foreign}",
        f"- Kernel: {platform.release()}; Python {platform.python_version()}",
        f"- Library sources: {reports[first].get('sources', 'unknown')}",
    ]
    if any(report.get("quick") for report in ran.values()):
        lines.append("- **Quick run** (`--quick`: 2 short repetitions, no waiting for an idle CPU): a check "
                     "of the pipeline, not a measurement")
    return lines


def results_section(reports, build_dir):
    lines = [BEGIN_MARKER, "", "## Machine", ""]
    lines += machine_lines({program: reports[program] for program in MAIN_PROGRAMS}, "bench_matmul")
    lines += ["", "Times are medians of 5 repetitions; ±x% beside one is the coefficient of variation of the "
              "5 (on a shared virtual machine, memory bandwidth in particular varies from run to run). "
              "Rates and ratios are computed from the medians.",
              "", "## Matrix products (float32, square, forward only)", ""]
    lines += matmul_table(medians(reports["bench_matmul"]))
    lines += ["", "## Memory-bound ops (float32; GB/s = (bytes read + bytes written) / time)", ""]
    lines += elementwise_table(medians(reports["bench_elementwise"]))
    lines += ["", "## Per-op overhead on tiny tensors (float32, 1 thread in practice)", ""]
    lines += overhead_table(medians(reports["bench_overhead"]))
    lines += [
        "",
        "## Reproducing",
        "",
        "Configure a Release build with the benchmarks on (`cmake -S . -B build/bench-rel "
        "-DCMAKE_BUILD_TYPE=Release -DNORMGRAD_BUILD_TESTS=OFF -DNORMGRAD_BUILD_EXAMPLES=OFF`), "
        "build it (`cmake --build build/bench-rel`), make sure nothing else is using the CPU, and "
        f"run `python3 bench/run_benchmarks.py {build_dir}` from the repository root. The script "
        f"runs the five programs (and bench_norms_torch.py when PyTorch imports) with OMP_NUM_THREADS={THREADS}, "
        + " ".join(f"`{flag}`" for flag in BENCHMARK_FLAGS)
        + ", keeps the medians, prints this section, the normalisers' and convolution's, and rewrites "
        "each between its markers; the raw JSON reports are left in the build's bench/ folder. "
        "`--only bench_norms` (or `--only bench_conv`) measures and rewrites that section alone. "
        "Every ratio compares numbers "
        "from the same run, so they travel between machines better than the absolute times.",
        "",
        END_MARKER,
    ]
    return "\n".join(lines) + "\n"


def norms_section(norm_report, torch_report, build_dir):
    reports = {NORM_PROGRAM: norm_report, TORCH_REPORT: torch_report}
    run_lines = machine_lines(reports, NORM_PROGRAM)
    torch_line = (f"- PyTorch: {torch_report['torch_version']}, torch.set_num_threads({torch_report['threads']})"
                  if torch_report is not None else "- PyTorch: not run (it does not import, or --no-torch)")
    lines = [NORMS_BEGIN_MARKER, ""]
    lines += norm_section(norm_report, torch_report, run_lines + [torch_line])
    lines += ["", f"Measured with `python3 bench/run_benchmarks.py {build_dir}`, alone with `--only "
              f"{NORM_PROGRAM}`; the same flags as above.", "", NORMS_END_MARKER]
    return "\n".join(lines) + "\n"


def conv_results_section(conv_report, build_dir):
    lines = [CONV_BEGIN_MARKER, ""]
    lines += conv_section(conv_report, machine_lines({CONV_PROGRAM: conv_report}, CONV_PROGRAM))
    lines += ["", f"Measured with `python3 bench/run_benchmarks.py {build_dir}`, alone with `--only "
              f"{CONV_PROGRAM}`; the same flags as above.", "", CONV_END_MARKER]
    return "\n".join(lines) + "\n"


HEADER = """# Benchmark results

The programs in this folder time normgrad against ceilings measured in the same run; see the
comment at the top of each program for what it measures and why. Everything between the markers
below is rewritten by `bench/run_benchmarks.py`.

"""


def twin_section_header(begin_marker, title, build_dir, torch_name, results, corpus_line, quick):
    """The first lines of a section that sets a normgrad benchmark beside its PyTorch twin: the
    title, date, CPU, sources, the corpus, the most CPU other processes took during one run of
    `results` (lists of reports by key), and a warning on a quick run."""
    foreign = max(run["foreign_cpu_share"] for runs_of in results.values() for run in runs_of)
    lines = [begin_marker, "", f"## {title}", "",
             f"- Date: {datetime.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %z')}",
             f"- CPU: {cpu_model()}, {os.cpu_count()} cores; {THREADS} threads on both sides",
             f"- Library sources: {source_version(build_dir)}; {torch_name}",
             f"- Corpus: {corpus_line}",
             f"- Most CPU time taken by other processes during one run: {foreign:.1%}"]
    if quick:
        lines.append("- **Quick run** (`--quick`): a check of the pipeline, not a measurement; not to be committed")
    return lines


def write_section(path, section, begin_marker, end_marker):
    """Replaces the text between the markers with `section` (which carries the markers), or
    appends it when the file has no such markers yet."""
    text = path.read_text() if path.exists() else HEADER
    begin, end = text.find(begin_marker), text.find(end_marker)
    if begin < 0 or end < begin:
        text = text.rstrip("\n") + "\n\n" + begin_marker + "\n" + end_marker + "\n"
        begin, end = text.find(begin_marker), text.find(end_marker)
    after = text[end + len(end_marker):].lstrip("\n")
    text = text[:begin] + section + ("\n" + after if after else "")
    path.write_text(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build_dir", type=pathlib.Path, help="a Release build directory")
    parser.add_argument("--results", type=pathlib.Path,
                        default=pathlib.Path(__file__).resolve().parent / "RESULTS.md",
                        help="the markdown file to update (default: bench/RESULTS.md)")
    parser.add_argument("--no-write", action="store_true", help="print the tables only")
    parser.add_argument("--from-saved", action="store_true",
                        help="do not run anything: use the JSON reports the last run left in BUILD_DIR/bench")
    parser.add_argument("--only", choices=[NORM_PROGRAM, CONV_PROGRAM],
                        help="run only this program (and its PyTorch counterpart) and rewrite only its "
                             "section of the results, keeping the others")
    parser.add_argument("--no-torch", action="store_true", help="leave out the comparison with PyTorch")
    parser.add_argument("--quick", action="store_true",
                        help="check the pipeline: 2 short repetitions, no waiting for an idle CPU")
    arguments = parser.parse_args()
    build_dir = arguments.build_dir
    programs = PROGRAMS if arguments.only is None else (arguments.only,)

    def saved(name):
        return json.loads(report_path(build_dir, name).read_text())

    if arguments.from_saved:
        reports = {program: saved(program) for program in programs}
        torch_saved = report_path(build_dir, TORCH_REPORT).exists() and not arguments.no_torch
        torch_report = saved(TORCH_REPORT) if torch_saved and NORM_PROGRAM in reports else None
    else:
        sources = source_version(build_dir)
        reports = {program: run_program(build_dir, program, arguments.quick) for program in programs}
        with_torch = NORM_PROGRAM in reports and not arguments.no_torch
        torch_report = run_torch(build_dir, arguments.quick) if with_torch else None
        for program, report in reports.items():
            report["sources"] = sources
            report_path(build_dir, program).write_text(json.dumps(report, indent=1))

    sections = []
    if all(program in reports for program in MAIN_PROGRAMS):
        sections.append((results_section(reports, build_dir), BEGIN_MARKER, END_MARKER))
    if NORM_PROGRAM in reports:
        sections.append((norms_section(reports[NORM_PROGRAM], torch_report, build_dir), NORMS_BEGIN_MARKER,
                         NORMS_END_MARKER))
    if CONV_PROGRAM in reports:
        sections.append((conv_results_section(reports[CONV_PROGRAM], build_dir), CONV_BEGIN_MARKER,
                         CONV_END_MARKER))
    for section, begin_marker, end_marker in sections:
        print(section)
        if not arguments.no_write:
            write_section(arguments.results, section, begin_marker, end_marker)
    if not arguments.no_write:
        print(f"updated {arguments.results}", file=sys.stderr)


if __name__ == "__main__":
    main()
