"""Command line of scripts/reproduce: check the flags and the data, build the programs, run the
experiments asked for (reusing or continuing what an earlier run left), write the report."""

import argparse
import os
import subprocess
import sys
import textwrap
import time

from . import stamps
from .experiments import BUDGETS, EXPERIMENTS, GROUPS, Inputs, select
from .report import Outcome, write_report

REPOSITORY = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_CORPUS = os.path.join(REPOSITORY, "out", "corpus", "debian-en-de")
CORPUS_FILES = ("train.en", "train.de", "dev.en", "dev.de", "test.en", "test.de")


class UsageError(Exception):
    """A flag, folder or combination that cannot work: reported before any work starts."""


def _epilog() -> str:
    lines = ["experiments (and their time at the demo budget on 2 cores):"]
    for e in EXPERIMENTS:
        tables = ", ".join(e.tables) or "beyond the paper"
        lines += textwrap.wrap(f"{e.title} ({tables}; about {e.demo_minutes:g} min)", 78,
                               initial_indent=f"  {e.name:<12} ", subsequent_indent=" " * 15)
    lines.append("groups: " + "; ".join(f"{name} = {' '.join(members)}"
                                        for name, members in GROUPS.items()))
    lines += ["",
              "budgets: tiny (seconds: checks the pipeline), demo (the default), long (about ten",
              "times the demo's steps), paper (the paper's sizes: for a GPU, with --corpus and",
              "--cifar10 naming the paper's data sets)",
              "",
              "An experiment whose folder holds finished results of the same source version,",
              "budget and flags is reused; an interrupted one continues from its checkpoints;",
              "--force starts it again (the old folder is kept as <folder>.previous)."]
    return "\n".join(lines)


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="scripts/reproduce",
        description="Reproduce the RMSNorm paper's experiments with normgrad: build the "
                    "programs in Release, run the experiments and write their tables, plots "
                    "and one report, out/REPORT.md.",
        epilog=_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("experiments", nargs="*", metavar="EXPERIMENT",
                        help="what to run (default: all)")
    parser.add_argument("--budget", default="demo", choices=BUDGETS,
                        help="the scale (default: demo)")
    parser.add_argument("--device", default="cpu",
                        help="cpu (the default) or cuda (the first GPU; CUDA_VISIBLE_DEVICES "
                             "picks another)")
    parser.add_argument("--precision", default="float32", choices=("float32", "bfloat16"),
                        help="bfloat16: the translation and image experiments train in mixed "
                             "precision (bfloat16 activations, float32 parameters), into "
                             "folders of their own; the others stay float32 (default: float32)")
    parser.add_argument("--threads", type=int, metavar="N",
                        help="CPU threads of every program (default: every core)")
    parser.add_argument("--force", action="store_true",
                        help="run the experiments again even where results exist")
    parser.add_argument("--out", default=os.path.join(REPOSITORY, "out"), metavar="DIR",
                        help="where the experiments' folders and the report go (default: out)")
    parser.add_argument("--corpus", metavar="DIR",
                        help="the translation corpus: train, dev and test .en/.de (default: "
                             "out/corpus/debian-en-de, built by scripts/build_corpus)")
    parser.add_argument("--cifar10", metavar="DIR",
                        help="CIFAR-10's binary version, for the image experiment instead of "
                             "Fashion-MNIST (required at the paper budget)")
    parser.add_argument("--coco", metavar="DIR",
                        help="MS-COCO as the order-embedding code has it (train.txt, val.txt, "
                             "test.txt, images/10crop/*.npy), for the retrieval experiment "
                             "instead of the corpus's task (required at the paper budget)")
    parser.add_argument("--cnn-questions", metavar="DIR",
                        help="the CNN corpus's questions (questions/training, validation, test "
                             "of *.question files), for the reading experiment instead of the "
                             "corpus's cloze task (required at the paper budget)")
    parser.add_argument("--fashion-mnist", metavar="DIR",
                        help="Fashion-MNIST's folder, if not Debian's dataset-fashion-mnist")
    parser.add_argument("--build-dir", default=os.path.join(REPOSITORY, "build", "release"),
                        metavar="DIR", help="the build tree (default: build/release)")
    parser.add_argument("--no-build", action="store_true",
                        help="use the programs already in --build-dir; install and build nothing")
    parser.add_argument("--jobs", type=int, default=os.cpu_count(), metavar="N",
                        help="parallel build jobs (default: every core)")
    parser.add_argument("--report-only", action="store_true",
                        help="run nothing: write the report from the results there are")
    return parser.parse_args(argv)


def check_arguments(args, chosen: list) -> None:
    """Everything that can be known wrong before any work: raises UsageError."""
    if args.device not in ("cpu", "cuda"):
        raise UsageError(f"--device must be cpu or cuda, got '{args.device}'")
    if args.threads is not None and args.threads < 1:
        raise UsageError(f"--threads must be positive, got {args.threads}")
    if args.jobs < 1:
        raise UsageError(f"--jobs must be positive, got {args.jobs}")
    if args.corpus is not None:
        missing = [f for f in CORPUS_FILES if not os.path.isfile(os.path.join(args.corpus, f))]
        if missing:
            raise UsageError(f"--corpus '{args.corpus}' lacks {', '.join(missing)}")
    if args.cifar10 is not None and not os.path.isdir(args.cifar10):
        raise UsageError(f"--cifar10 '{args.cifar10}' is not a folder")
    if args.coco is not None and not os.path.isdir(os.path.join(args.coco, "images")):
        raise UsageError(f"--coco '{args.coco}' has no images/ folder of features")
    if args.cnn_questions is not None and \
            not os.path.isdir(os.path.join(args.cnn_questions, "questions")):
        raise UsageError(f"--cnn-questions '{args.cnn_questions}' has no questions/ folder")
    if args.fashion_mnist is not None and not os.path.isdir(args.fashion_mnist):
        raise UsageError(f"--fashion-mnist '{args.fashion_mnist}' is not a folder")
    if args.budget == "paper" and not args.report_only:
        names = {e.name for e in chosen}
        if names & set(GROUPS["nmt"]) and args.corpus is None:
            raise UsageError("the paper budget trains the paper's models for 300k steps: give "
                             "it the paper's corpus (WMT14 English-German) with --corpus")
        if "oe" in names and args.coco is None:
            raise UsageError("the paper budget trains order embeddings at the paper's sizes: "
                             "give it MS-COCO with --coco")
        if "reader" in names and args.cnn_questions is None:
            raise UsageError("the paper budget trains the attentive reader at the paper's "
                             "sizes: give it the CNN corpus with --cnn-questions")
        if "cnn" in names and args.cifar10 is None:
            raise UsageError("the paper budget trains ConvPool-CNN-C for 200 epochs: give it "
                             "CIFAR-10 with --cifar10")


def _stage(start: float, text: str) -> None:
    print(f"==> [{time.monotonic() - start:.0f}s] {text}", flush=True)


def has_gpu() -> bool:
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0
    except OSError:
        return False


def build(args, chosen: list, start: float) -> None:
    """Installs what is missing and builds the chosen programs in Release."""
    _stage(start, "setup: checking packages")
    subprocess.run([os.path.join(REPOSITORY, "scripts", "setup")], check=True)
    _stage(start, f"configure: {args.build_dir}")
    configure = ["cmake", "-S", REPOSITORY, "-B", args.build_dir, "-DCMAKE_BUILD_TYPE=Release",
                 "-DNORMGRAD_BUILD_TESTS=OFF", "-DNORMGRAD_BUILD_BENCH=OFF",
                 "-DNORMGRAD_BUILD_EXAMPLES=ON"]
    if args.device == "cuda":
        configure += ["-DNORMGRAD_CUDA=ON", "-DCMAKE_CUDA_ARCHITECTURES=native"]
    elif not has_gpu():
        # Kernels that cannot run here would only add minutes to the build.
        configure += ["-DNORMGRAD_CUDA=OFF"]
    subprocess.run(configure, check=True)
    targets = [os.path.basename(e.program) for e in chosen]
    _stage(start, f"build: {' '.join(targets)} with {args.jobs} jobs")
    subprocess.run(["cmake", "--build", args.build_dir, "-j", str(args.jobs), "--target",
                    *targets], check=True)


def run_experiment(experiment, inputs: Inputs, version: str, force: bool, environment: dict,
                   start: float) -> Outcome:
    folder = experiment.output(inputs)
    command = experiment.command(inputs)
    key = stamps.make_key(version, inputs.budget, inputs.device, command)
    decision = stamps.decide(folder, key, force)
    stamp = stamps.read_stamp(folder) or {}
    if decision == "reuse":
        _stage(start, f"{experiment.name}: results of this version and budget in {folder}; "
                      "reused (--force runs it again)")
        return Outcome(experiment, folder, "reused", stamp.get("seconds"))
    earlier = 0.0
    if decision == "fresh":
        moved = stamps.set_aside(folder)
        if moved:
            print(f"    {folder} holds other results; kept as {moved}", flush=True)
    else:
        earlier = float(stamp.get("seconds") or 0.0)
        _stage(start, f"{experiment.name}: continuing the interrupted run in {folder}")
    stamps.write_stamp(folder, key, "running", previous_seconds=earlier)
    _stage(start, f"{experiment.name}: {' '.join(command)}")
    began = time.monotonic()
    try:
        result = subprocess.run(command, env=environment)
    except KeyboardInterrupt:
        stamps.write_stamp(folder, key, "running", time.monotonic() - began, earlier)
        raise
    seconds = time.monotonic() - began
    if result.returncode != 0:
        stamps.write_stamp(folder, key, "running", seconds, earlier)
        return Outcome(experiment, folder, "failed", earlier + seconds)
    stamps.write_stamp(folder, key, "done", seconds, earlier)
    return Outcome(experiment, folder, "continued" if decision == "continue" else "ran",
                   earlier + seconds)


def existing_outcome(experiment, inputs: Inputs, version: str) -> Outcome:
    """An experiment not run now: its folder's finished results of this budget and flags, said
    to be of another source version when they are, else "not run"."""
    folder = experiment.output(inputs)
    stamp = stamps.read_stamp(folder)
    key = stamps.make_key(version, inputs.budget, inputs.device, experiment.command(inputs))
    if not stamp or stamp.get("state") != "done":
        return Outcome(experiment, folder, "not run", None)
    if stamp["key"] == key:
        return Outcome(experiment, folder, "reused", stamp.get("seconds"))
    made = dict(stamp["key"], version=version)
    if made == key:
        return Outcome(experiment, folder, f"reused, of version {stamp['key']['version'][:12]}",
                       stamp.get("seconds"))
    return Outcome(experiment, folder, "not run", None)


def report_path(out: str, budget: str) -> str:
    return os.path.join(out, "REPORT.md" if budget == "demo" else f"REPORT-{budget}.md")


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        chosen = select(args.experiments)
        check_arguments(args, chosen)
    except (UsageError, ValueError) as error:
        print(f"scripts/reproduce: {error}", file=sys.stderr)
        return 2

    start = time.monotonic()
    args.build_dir = os.path.abspath(args.build_dir)
    args.out = os.path.abspath(args.out)
    corpus = os.path.abspath(args.corpus or DEFAULT_CORPUS)
    inputs = Inputs(build=args.build_dir, out=args.out, budget=args.budget, device=args.device,
                    threads=args.threads, corpus=corpus,
                    cifar10=os.path.abspath(args.cifar10) if args.cifar10 else None,
                    coco=os.path.abspath(args.coco) if args.coco else None,
                    cnn=os.path.abspath(args.cnn_questions) if args.cnn_questions else None,
                    precision=args.precision)
    version = stamps.source_version(REPOSITORY)
    environment = dict(os.environ)
    if args.fashion_mnist:
        environment["NORMGRAD_FASHION_MNIST"] = os.path.abspath(args.fashion_mnist)

    to_run = [] if args.report_only else chosen
    try:
        if to_run and not args.no_build:
            build(args, to_run, start)
        missing = [e.program for e in to_run if not os.access(
            os.path.join(args.build_dir, e.program), os.X_OK)]
        if missing:
            raise UsageError(f"{args.build_dir} has no {', '.join(missing)}; build it, or leave "
                             "out --no-build")
        # The retrieval and reading experiments need the corpus only when not given their data.
        own_data = {"oe": args.coco, "reader": args.cnn_questions}
        if any(e.needs_corpus and not own_data.get(e.name) for e in to_run) \
                and args.corpus is None:
            _stage(start, "data: scripts/build_corpus")
            subprocess.run([os.path.join(REPOSITORY, "scripts", "build_corpus"), "--out",
                            corpus], check=True)
    except UsageError as error:
        print(f"scripts/reproduce: {error}", file=sys.stderr)
        return 2
    except subprocess.CalledProcessError as error:
        print(f"scripts/reproduce: '{' '.join(error.cmd)}' failed (exit status "
              f"{error.returncode})", file=sys.stderr)
        return 1

    os.makedirs(args.out, exist_ok=True)
    outcomes, failed = [], None
    for experiment in EXPERIMENTS:
        if experiment in to_run and failed is None:
            outcome = run_experiment(experiment, inputs, version, args.force, environment, start)
            if outcome.state == "failed":
                failed = experiment
        else:
            outcome = existing_outcome(experiment, inputs, version)
        outcomes.append(outcome)

    path = report_path(args.out, args.budget)
    write_report(path, inputs, version, outcomes, REPOSITORY)
    _stage(start, f"report: {path}")
    if failed is not None:
        print(f"scripts/reproduce: {failed.name} failed ({failed.program}); its runs are kept, "
              "and the next scripts/reproduce continues them", file=sys.stderr)
        return 1
    _stage(start, "done")
    return 0
