"""What run_benchmarks.py and norm_results.py share: reading the medians out of a Google
Benchmark JSON report, and formatting times and verdicts. Python 3 standard library only."""

UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def medians(report):
    """Maps "name/size" to the median aggregate of that benchmark, in registration order
    (random interleaving shuffles the order of the report). Each entry gains "spread": the
    coefficient of variation of the repetitions' times."""
    spreads = {entry["run_name"]: entry["real_time"] for entry in report["benchmarks"]
               if entry.get("aggregate_name") == "cv"}
    entries = sorted((entry for entry in report["benchmarks"] if entry.get("aggregate_name") == "median"),
                     key=lambda entry: entry["family_index"])
    return {entry["run_name"].removesuffix("/real_time"): dict(entry, spread=spreads.get(entry["run_name"]))
            for entry in entries}


def seconds(entry):
    return entry["real_time"] * UNIT_SECONDS[entry["time_unit"]]


def format_time(value):
    if value < 1e-6:
        return f"{value * 1e9:.0f} ns"
    if value < 1e-3:
        return f"{value * 1e6:.2f} µs"
    return f"{value * 1e3:.2f} ms"


def format_median(entry):
    """The median time, with the repetitions' coefficient of variation beside it."""
    text = format_time(seconds(entry))
    return text if entry.get("spread") is None else f"{text} ±{entry['spread']:.0%}"


def verdict(passed):
    return "pass" if passed else "**FAIL**"
