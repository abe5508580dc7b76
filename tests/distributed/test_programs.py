"""The example programs trained data-parallel on two ranks (mpirun -np 2 ... --distributed).

Run by ctest with NORMGRAD_BUILD_DIR (the build) and MPIEXEC (mpirun) in the environment. Each
case trains for a few steps: rank 0 alone writes the folder and prints, and a run interrupted
and resumed on two ranks repeats the losses of an uninterrupted one exactly.
"""

import csv
import os
import random
import subprocess
import tempfile
import unittest
from pathlib import Path

BUILD = Path(os.environ.get("NORMGRAD_BUILD_DIR", "build/dev"))
MPIEXEC = os.environ.get("MPIEXEC", "mpirun")
FASHION_MNIST = Path(os.environ.get("NORMGRAD_FASHION_MNIST") or
                     "/usr/share/datasets/fashion-mnist")


def program(name):
    return BUILD / "examples" / name / name


def two_ranks(*arguments, timeout=300):
    """Runs a program on two ranks; returns (exit status, stdout + stderr)."""
    command = [MPIEXEC, "-np", "2", "--oversubscribe", *map(str, arguments)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    return done.returncode, done.stdout + done.stderr


def write_corpus(folder, name, lines, seed):
    """An aligned pair of files, a toy language whose words are reversed in the other."""
    words = "the a file window could not be opened closed new old user system error message".split()
    generator = random.Random(seed)
    with open(folder / f"{name}.en", "w") as en, open(folder / f"{name}.de", "w") as de:
        for _ in range(lines):
            sentence = [generator.choice(words) for _ in range(generator.randint(3, 9))]
            en.write(" ".join(sentence) + "\n")
            de.write(" ".join(word[::-1] + "n" for word in sentence) + "\n")


def column(path, name):
    with open(path) as table:
        return [row[name] for row in csv.DictReader(table)]


class TranslationProgramsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.scratch = tempfile.TemporaryDirectory(prefix="normgrad_distributed_")
        cls.folder = Path(cls.scratch.name)
        write_corpus(cls.folder, "train", 400, seed=1)
        write_corpus(cls.folder, "dev", 21, seed=2)

    @classmethod
    def tearDownClass(cls):
        cls.scratch.cleanup()

    def corpus(self):
        f = self.folder
        return ["--train-source", f / "train.en", "--train-target", f / "train.de",
                "--dev-source", f / "dev.en", "--dev-target", f / "dev.de"]

    def check_resume_repeats_the_run(self, name, sizes):
        """6 steps at once against 3 steps and a resumed 3: the same losses, step for step."""
        common = [*self.corpus(), *sizes, "--dev-bleu-every", "3", "--dev-loss-every", "3",
                  "--checkpoint-every", "3", "--threads", "1", "--no-progress-bar",
                  "--distributed"]
        whole, parts = self.folder / f"{name}_whole", self.folder / f"{name}_parts"
        status, output = two_ranks(program(name), "train", "--model", whole, *common,
                                   "--steps", "6")
        self.assertEqual(status, 0, output)
        # Rank 0 alone prints and writes: one summary, one row per step.
        self.assertEqual(output.count("stopped at step 6 by the step budget"), 1, output)
        self.assertEqual(output.count("best dev BLEU"), 1, output)
        self.assertEqual(column(whole / "train.csv", "step"), [str(s) for s in range(1, 7)])
        status, output = two_ranks(program(name), "train", "--model", parts, *common,
                                   "--steps", "3")
        self.assertEqual(status, 0, output)
        status, output = two_ranks(program(name), "train", "--model", parts, "--resume",
                                   "--steps", "6", "--threads", "1", "--no-progress-bar",
                                   "--distributed")
        self.assertEqual(status, 0, output)
        self.assertIn("resumed from", output)
        self.assertEqual(column(parts / "train.csv", "train_loss"),
                         column(whole / "train.csv", "train_loss"))
        self.assertEqual(column(parts / "train.csv", "dev_token_loss"),
                         column(whole / "train.csv", "dev_token_loss"))
        # A state of two ranks resumes only on two: one process is refused, saying so.
        alone = subprocess.run([program(name), "train", "--model", parts, "--resume", "--steps",
                                "8", "--threads", "1"], capture_output=True, text=True)
        self.assertNotEqual(alone.returncode, 0)
        self.assertIn("was written by a job of 2 process(es); resume it with as many "
                      "(mpirun -np 2)", alone.stderr)

    def test_gru_nmt_resumes_on_two_ranks_as_if_never_stopped(self):
        self.check_resume_repeats_the_run(
            "gru_nmt", ["--vocabulary", "60", "--embedding", "12", "--hidden", "16"])

    def test_transformer_nmt_resumes_on_two_ranks_as_if_never_stopped(self):
        self.check_resume_repeats_the_run(
            "transformer_nmt", ["--vocabulary", "60", "--model-size", "16", "--heads", "2",
                                "--feed-forward", "32", "--encoder-layers", "1",
                                "--decoder-layers", "1", "--batch-tokens", "300"])

    def test_a_bad_flag_ends_both_ranks_at_once(self):
        status, output = two_ranks(program("gru_nmt"), "train", "--model",
                                   self.folder / "bad", *self.corpus(), "--hidden", "-3",
                                   "--distributed", timeout=60)
        self.assertNotEqual(status, 0, output)


@unittest.skipUnless(FASHION_MNIST.is_dir(), f"no Fashion-MNIST at {FASHION_MNIST}")
class ConvPoolProgramTest(unittest.TestCase):
    def test_convpool_cnn_c_trains_on_two_ranks_and_its_test_error_is_the_whole_sets(self):
        """BatchNorm's running statistics come from rank 0 (which writes the model), and each
        rank tests its share: the job's test error is what one process measures afterwards."""
        with tempfile.TemporaryDirectory(prefix="normgrad_distributed_") as scratch:
            common = ["--norm", "batchnorm", "--train-size", "400", "--test-size", "200",
                      "--batch", "25", "--width", "0.1", "--init-images", "100", "--threads",
                      "1", "--no-progress", "--distributed", "--epochs", "2"]
            binary = program("convpool_cnn_c")
            runs = []
            for name in ("first", "second"):
                folder = Path(scratch) / name
                status, output = two_ranks(binary, "train", "--out", folder, *common)
                self.assertEqual(status, 0, output)
                self.assertEqual(output.count("epoch   2/2"), 1, output)
                runs.append(folder / "train.csv")
            # Two runs of the same job: the same records (nothing depends on timing).
            for name in ("train_loss", "train_error", "test_error"):
                self.assertEqual(column(runs[0], name), column(runs[1], name))
            done = subprocess.run([binary, "evaluate", "--model", Path(scratch) / "first",
                                   "--threads", "1"], capture_output=True, text=True)
            self.assertEqual(done.returncode, 0, done.stderr)
            last = float(column(runs[0], "test_error")[-1])
            self.assertIn(f"test error {100 * last:.2f}% on 200", done.stdout)


if __name__ == "__main__":
    unittest.main()
