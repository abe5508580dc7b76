"""The experiments that scripts/reproduce runs: for each, the program, its flags at each budget,
its output folder and the paper's tables and figures it yields."""

import os
from dataclasses import dataclass
from typing import Callable, Optional

# tiny: seconds, to check the whole pipeline (the test suite runs it on fixture data);
# demo: the default, about 45 minutes on 2 cores; long: a few hours on 2 cores;
# paper: the paper's model sizes and step counts, for a GPU and the paper's data sets.
BUDGETS = ("tiny", "demo", "long", "paper")


@dataclass(frozen=True)
class Inputs:
    """What every experiment of one scripts/reproduce run is given."""
    build: str                 # the build tree holding the programs
    out: str                   # the output root: one folder per experiment, and the report
    budget: str                # one of BUDGETS
    device: str                # "cpu" or "cuda"
    threads: Optional[int]     # CPU threads, or None for the programs' default (every core)
    corpus: str                # the English-German corpus folder (train, dev and test .en/.de)
    cifar10: Optional[str]     # CIFAR-10's folder (the image experiment at the paper budget)
    coco: Optional[str] = None  # MS-COCO in the order-embedding code's layout (retrieval)
    cnn: Optional[str] = None   # the CNN corpus's questions (reading comprehension)
    precision: str = "float32"  # or "bfloat16": mixed precision, where the program takes it


@dataclass(frozen=True)
class Experiment:
    name: str                  # as the command line names it
    title: str                 # a line for --help and the report
    tables: tuple              # the paper's tables and figures it gives, in the paper's words
    program: str               # relative to the build tree
    folder: str                # the output folder's name at the demo budget
    flags: Callable            # Inputs -> the program's arguments
    demo_minutes: float        # measured at the demo budget on 2 cores (AMD EPYC, 2026-11-26)
    in_paper: bool = True      # False: an experiment of the LayerNorm paper, not the RMSNorm one
    needs_corpus: bool = False
    takes_precision: bool = False  # its program trains in bfloat16 with --precision bfloat16

    def precision(self, inputs: Inputs) -> str:
        """The precision it runs in: the one asked for where its program takes it."""
        return inputs.precision if self.takes_precision else "float32"

    def output(self, inputs: Inputs) -> str:
        """The experiment's folder: out/<folder>, with -<budget> after it but at demo, and
        -bfloat16 after that in mixed precision."""
        suffix = "" if inputs.budget == "demo" else "-" + inputs.budget
        if self.precision(inputs) != "float32":
            suffix += "-" + self.precision(inputs)
        return os.path.join(inputs.out, self.folder + suffix)

    def command(self, inputs: Inputs) -> list:
        """The whole command line, the program first."""
        return [os.path.join(inputs.build, self.program)] + self.flags(inputs, self.output(inputs))


def _device_flags(inputs: Inputs) -> list:
    flags = ["--device", inputs.device]
    if inputs.threads:
        flags += ["--threads", str(inputs.threads)]
    return flags


def _invariance_flags(inputs: Inputs, out: str) -> list:
    # The lab measures exact properties on small random layers: the same at every budget.
    return ["--out", out]


def _mnist_mlp_flags(inputs: Inputs, out: str) -> list:
    scale = {
        "tiny": ["--steps", "10", "--eval-every", "5", "--train-size", "1000"],
        "demo": ["--steps", "1000", "--eval-every", "250"],
        "long": ["--epochs", "1"],
        "paper": ["--epochs", "10"],
    }[inputs.budget]
    return scale + ["--out", out] + _device_flags(inputs)


def _precision_flags(inputs: Inputs) -> list:
    # Only the programs that take --precision get these flag functions.
    return [] if inputs.precision == "float32" else ["--precision", inputs.precision]


def _nmt_flags(presets: dict) -> Callable:
    def flags(inputs: Inputs, out: str) -> list:
        return (["experiment", "--budget", inputs.budget, "--preset", presets[inputs.budget],
                 "--corpus", inputs.corpus, "--out", out] + _device_flags(inputs) +
                _precision_flags(inputs))
    return flags


def _convpool_flags(inputs: Inputs, out: str) -> list:
    flags = ["experiment", "--budget", inputs.budget, "--out", out, "--no-progress"]
    if inputs.cifar10:
        flags += ["--dataset", "cifar10", "--data", inputs.cifar10]
    return flags + _device_flags(inputs) + _precision_flags(inputs)


def _order_embedding_flags(inputs: Inputs, out: str) -> list:
    # Without COCO, the local retrieval task is built from the translation corpus.
    data = ["--data", inputs.coco] if inputs.coco else ["--corpus", inputs.corpus]
    return (["experiment", "--budget", inputs.budget, "--out", out, "--no-progress"] + data +
            _device_flags(inputs))


def _attentive_reader_flags(inputs: Inputs, out: str) -> list:
    # Without the CNN corpus, the local cloze task is built from the translation corpus.
    data = ["--data", inputs.cnn] if inputs.cnn else ["--corpus", inputs.corpus]
    return (["experiment", "--budget", inputs.budget, "--out", out, "--no-progress"] + data +
            _device_flags(inputs))


EXPERIMENTS = (
    Experiment(
        name="invariance",
        title="the invariance lab: which re-scalings and re-centrings leave each norm unchanged",
        tables=("Table 1",),
        program="examples/norm_invariance/norm_invariance",
        folder="norm_invariance",
        flags=_invariance_flags,
        demo_minutes=0.05),
    Experiment(
        name="mlp",
        title="the LayerNorm paper's MLP on Fashion-MNIST, five norms at batch sizes 128 and 4",
        tables=(),
        program="examples/mnist_mlp/mnist_mlp",
        folder="mnist_mlp",
        flags=_mnist_mlp_flags,
        demo_minutes=1.9,
        in_paper=False),
    Experiment(
        name="gru",
        title="RNNSearch (a GRU encoder-decoder) with each norm on the English-German corpus",
        tables=("Table 2", "Figure 1", "Table 5", "Figure 4"),
        program="examples/gru_nmt/gru_nmt",
        folder="gru_nmt",
        flags=_nmt_flags({"tiny": "tiny", "demo": "small", "long": "small", "paper": "paper"}),
        demo_minutes=10.9,
        needs_corpus=True,
        takes_precision=True),
    Experiment(
        name="transformer",
        title="the Transformer with each norm, post-norm and pre-norm, on the same corpus",
        tables=("Table 4",),
        program="examples/transformer_nmt/transformer_nmt",
        folder="transformer_nmt",
        flags=_nmt_flags({"tiny": "tiny", "demo": "small", "long": "small", "paper": "base"}),
        demo_minutes=5.8,
        needs_corpus=True,
        takes_precision=True),
    Experiment(
        name="cnn",
        title="ConvPool-CNN-C with each of six normalisers on Fashion-MNIST (CIFAR-10 if given)",
        tables=("Table 10", "Table 9"),
        program="examples/convpool_cnn_c/convpool_cnn_c",
        folder="convpool_cnn_c",
        flags=_convpool_flags,
        demo_minutes=4.3,
        takes_precision=True),
    Experiment(
        name="oe",
        title="order embeddings for image-caption retrieval, each norm in the caption GRU, on a "
              "retrieval task built from the corpus (MS-COCO if given)",
        tables=("Table 7", "Table 8", "Figure 6"),
        program="examples/order_embedding/order_embedding",
        folder="order_embedding",
        flags=_order_embedding_flags,
        demo_minutes=6.3,
        needs_corpus=True),
    Experiment(
        name="reader",
        title="the attentive reader, each norm inside its LSTMs, on a cloze task built from the "
              "corpus (the CNN corpus if given)",
        tables=("Table 6", "Figure 5"),
        program="examples/attentive_reader/attentive_reader",
        folder="attentive_reader",
        flags=_attentive_reader_flags,
        demo_minutes=15.0,
        needs_corpus=True),
)

# Names that stand for several experiments.
GROUPS = {
    "all": tuple(e.name for e in EXPERIMENTS),
    "nmt": ("gru", "transformer"),
}

# The paper's tables that no example reproduces yet, and why.
NOT_REPRODUCED = (
    ("Table 3", "RNNSearch timed in two more toolkits (Theano and PyTorch): normgrad is a third, "
                "and its times are Table 2's"),
    ("Figure 3", "dev BLEU against pRMSNorm's share p from 10% to 100%: not run"),
)


def by_name(name: str) -> Experiment:
    for experiment in EXPERIMENTS:
        if experiment.name == name:
            return experiment
    raise KeyError(name)


def select(names: list) -> list:
    """The experiments the names ask for, in the order of EXPERIMENTS; every name known.
    Raises ValueError naming an unknown one."""
    wanted = set()
    for name in names or ["all"]:
        if name in GROUPS:
            wanted.update(GROUPS[name])
        elif any(e.name == name for e in EXPERIMENTS):
            wanted.add(name)
        else:
            known = ", ".join([e.name for e in EXPERIMENTS] + list(GROUPS))
            raise ValueError(f"unknown experiment '{name}'; expected one of {known}")
    return [e for e in EXPERIMENTS if e.name in wanted]
