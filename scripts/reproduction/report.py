"""REPORT.md: one report of a scripts/reproduce run. It opens with where and how the run was
made and what it shows of each of the paper's claims (claims.py), lists the paper's tables
with where each is found, then takes in every experiment's own report.md, the paper's numbers
beside ours as each program writes them."""

import datetime
import os
import re
from dataclasses import dataclass
from typing import Optional

from . import claims
from .experiments import EXPERIMENTS, NOT_REPRODUCED, Experiment, Inputs

BUDGET_WORDS = {
    "tiny": "tiny (a few steps of tiny models: it checks the pipeline and measures nothing)",
    "demo": "demo (small models for minutes each: about 45 minutes on 2 CPU cores)",
    "long": "long (the demo's models trained about ten times longer)",
    "paper": "paper (the paper's model sizes and step counts)",
}


@dataclass
class Outcome:
    """What became of one experiment in this run."""
    experiment: Experiment
    folder: str
    state: str                # "ran", "continued", "reused", "failed", "not run"
    seconds: Optional[float]  # the experiment's whole time, over all the sessions it took


def machine_description(device: str, threads: Optional[int]) -> str:
    """"AMD EPYC 7B13, 2 threads", and the GPU's name for --device cuda."""
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    text = f"{model}, {threads or os.cpu_count()} threads"
    if device != "cpu":
        text += f", device {device}"
    return text


def _duration(seconds: Optional[float]) -> str:
    if seconds is None:
        return "–"
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min"


_LINK = re.compile(r"(!?\[[^\]]*\]\()([^)\s]+)(\))")


def embed(markdown: str, folder: str) -> str:
    """A program's report.md made a section of REPORT.md: headings one level down, and links to
    files beside it made relative to the report's folder (`folder`: the report's folder to the
    program's)."""
    lines = []
    for line in markdown.splitlines():
        if line.startswith("#"):
            line = "#" + line
        lines.append(line)
    text = "\n".join(lines)

    def relink(match):
        target = match.group(2)
        if re.match(r"^([a-z]+:|/|#)", target):
            return match.group(0)
        return match.group(1) + f"{folder}/{target}" + match.group(3)
    return _LINK.sub(relink, text).strip() + "\n"


def _anchor(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    anchor = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return anchor.replace(" ", "-")


def _first_heading(markdown: str) -> str:
    for line in markdown.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return ""


def write_report(path: str, inputs: Inputs, version: str, outcomes: list,
                 repository: str) -> str:
    """Writes REPORT.md at `path` and returns its text."""
    base = os.path.dirname(os.path.abspath(path))
    found = {o.experiment.name: o.folder for o in outcomes if o.state != "not run"}
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    paper_notes = os.path.join(repository, "docs", "paper.md")
    if os.path.commonpath([base, repository]) == repository:  # out/ in the repository
        paper_notes = os.path.relpath(paper_notes, base)

    text = "# normgrad's reproduction of the RMSNorm paper (Zhang and Sennrich, NeurIPS 2019)\n\n"
    mixed = [o.experiment.name for o in outcomes
             if o.state != "not run" and o.experiment.precision(inputs) != "float32"]
    precision = (f"; mixed precision ({inputs.precision} activations, float32 parameters) in "
                 f"{', '.join(mixed)}" if mixed else "")
    text += (f"Written by `scripts/reproduce` on {when}: budget {BUDGET_WORDS[inputs.budget]}; "
             f"{machine_description(inputs.device, inputs.threads)}{precision}; source version "
             f"`{version}`. The paper's numbers stand beside ours in every table; where they "
             f"cannot be compared directly (other data, smaller models), "
             f"[docs/paper.md]({paper_notes}) says why.\n\n")

    text += "| experiment | the paper's | this run | time | folder |\n|---|---|---|---|---|\n"
    for o in outcomes:
        tables = ", ".join(o.experiment.tables) or "(the LayerNorm paper's)"
        folder = os.path.relpath(o.folder, base)
        text += (f"| {o.experiment.name}: {o.experiment.title} | {tables} | {o.state} | "
                 f"{_duration(o.seconds)} | `{folder}` |\n")
    total = sum(o.seconds or 0 for o in outcomes)
    text += f"\nThe experiments' time in all: {_duration(total)}.\n\n"

    text += "## The paper's claims, and what this run shows\n\n"
    text += ("Each experiment trains one model per norm from one seed, on the same batches: the "
             "bootstrap intervals and p-values measure the test set's sampling, not the spread "
             "between seeds; a speed-up is one run's medians.\n\n")
    text += claims.markdown(claims.claims(found))

    sections = []
    for o in outcomes:
        report = os.path.join(o.folder, "report.md")
        if o.state == "not run" or not os.path.isfile(report):
            continue
        with open(report, encoding="utf-8") as f:
            markdown = f.read()
        sections.append((o, _first_heading(markdown),
                         embed(markdown, os.path.relpath(o.folder, base))))

    text += "## The paper's tables\n\n| the paper's | where |\n|---|---|\n"
    for experiment in EXPERIMENTS:
        heading = next((h for o, h, _ in sections if o.experiment is experiment), None)
        for table in experiment.tables:
            where = (f"[{heading}](#{_anchor(heading)})" if heading else
                     f"not run: `scripts/reproduce {experiment.name}`")
            text += f"| {table} | {where} |\n"
    for table, why in NOT_REPRODUCED:
        text += f"| {table} | not reproduced: {why} |\n"
    text += "\n"

    for _, _, section in sections:
        text += section + "\n"

    temporary = path + ".tmp"
    with open(temporary, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(temporary, path)
    return text
