"""scripts/reproduce at the tiny budget with the programs of a build tree (NORMGRAD_BUILD_DIR)
on a fixture corpus: every experiment runs, the report has every table and claim, a second run
reuses the results, an interrupted one continues, and bad flags stop it before any work.

Fashion-MNIST comes from Debian's dataset-fashion-mnist (or NORMGRAD_FASHION_MNIST); without
it the two image experiments are left out, and the test says so."""

import json
import os
import random
import subprocess
import sys
import tempfile
import unittest

REPOSITORY = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
REPRODUCE = os.path.join(REPOSITORY, "scripts", "reproduce")
BUILD = os.environ.get("NORMGRAD_BUILD_DIR", "")
FASHION_MNIST = os.environ.get("NORMGRAD_FASHION_MNIST") or "/usr/share/datasets/fashion-mnist"

OBJECTS = [("file", "Datei"), ("folder", "Ordner"), ("window", "Fenster"), ("image", "Bild"),
           ("document", "Dokument"), ("message", "Nachricht"), ("printer", "Drucker")]
VERBS = [("opened", "geöffnet"), ("saved", "gespeichert"), ("deleted", "gelöscht"),
         ("found", "gefunden"), ("closed", "geschlossen")]


def write_corpus(folder: str) -> None:
    """Aligned English-German lines from two templates: train 400, dev 30, test 20."""
    os.makedirs(folder)
    pick = random.Random(7)
    for split, lines in (("train", 400), ("dev", 30), ("test", 20)):
        with open(os.path.join(folder, split + ".en"), "w", encoding="utf-8") as en, \
             open(os.path.join(folder, split + ".de"), "w", encoding="utf-8") as de:
            for _ in range(lines):
                (o_en, o_de), (v_en, v_de) = pick.choice(OBJECTS), pick.choice(VERBS)
                if pick.random() < 0.5:
                    en.write(f"the {o_en} could not be {v_en}\n")
                    de.write(f"die {o_de} konnte nicht {v_de} werden\n")
                else:
                    en.write(f"the {o_en} was {v_en}\n")
                    de.write(f"die {o_de} wurde {v_de}\n")


def has_fashion_mnist() -> bool:
    return os.path.isdir(FASHION_MNIST) and any(
        name.startswith("t10k-images") for name in os.listdir(FASHION_MNIST))


@unittest.skipUnless(BUILD, "NORMGRAD_BUILD_DIR names no build tree (ctest sets it)")
class ReproduceTinyTest(unittest.TestCase):
    def reproduce(self, *arguments):
        return subprocess.run([sys.executable, REPRODUCE, "--no-build", "--build-dir", BUILD,
                               "--budget", "tiny", "--threads", "2", *arguments],
                              capture_output=True, text=True)

    def test_the_whole_pipeline_at_the_tiny_budget(self):
        experiments = ["invariance", "nmt", "oe", "reader"]
        if has_fashion_mnist():
            experiments += ["mlp", "cnn"]
        else:
            print(f"\n{FASHION_MNIST} has no Fashion-MNIST: mlp and cnn left out", flush=True)
        with tempfile.TemporaryDirectory() as scratch:
            corpus, out = os.path.join(scratch, "corpus"), os.path.join(scratch, "out")
            write_corpus(corpus)
            first = self.reproduce("--corpus", corpus, "--out", out, *experiments)
            self.assertEqual(0, first.returncode, first.stdout + first.stderr)
            with open(os.path.join(out, "REPORT-tiny.md"), encoding="utf-8") as f:
                text = f.read()

            self.assertIn("budget tiny", text)
            self.assertIn("| ran |", text)
            self.assertIn("## The paper's claims, and what this run shows", text)
            tables = {"invariance": ["Table 1"], "nmt": ["Table 2", "Table 4", "Table 5"],
                      "mlp": [], "cnn": ["Table 10"], "oe": ["Table 7", "Table 8"],
                      "reader": ["Table 6"]}
            for experiment in experiments:
                for table in tables[experiment]:
                    self.assertRegex(text, rf"\| {table} \| \[[^]]+\]\(#", table)
            self.assertIn("## Table 1", text)                     # the invariance lab's
            self.assertIn("## Table 4: test BLEU and training time", text)
            self.assertIn("(transformer_nmt-tiny/post_norm.png)", text)
            self.assertIn("All 30 cells measured agree with the paper's Table 1", text)
            self.assertIn("Order embeddings: the RMSNorm paper's Table 7 in shape", text)
            self.assertIn("Order embeddings (Table 7): RMSNorm image R@1", text)
            self.assertIn("The attentive reader: the RMSNorm paper's Table 6 in shape", text)
            self.assertIn("The attentive reader (Figure 5): RMSNorm", text)
            self.assertIn("The attentive reader at the paper's sizes: RMSNorm", text)
            self.assertIn("Order embeddings at the paper's sizes: RMSNorm", text)
            claims = text.split("## The paper's claims")[1].split("## The paper's tables")[0]
            for name in ("gru", "transformer", "invariance", "oe", "reader") + (
                    ("cnn",) if has_fashion_mnist() else ()):
                self.assertNotIn(f"not run (`scripts/reproduce {name}`)", claims)
            self.assertNotIn("no RMSNorm or no LayerNorm", claims)  # every table's rows found
            if has_fashion_mnist():
                self.assertIn("ConvPool-CNN-C: the RMSNorm paper's Table 10 in shape", text)
                self.assertIn("The LayerNorm paper's MLP on Fashion-MNIST", text)

            second = self.reproduce("--corpus", corpus, "--out", out, "invariance")
            self.assertEqual(0, second.returncode, second.stdout + second.stderr)
            self.assertIn("invariance: results of this version and budget", second.stdout)
            self.assertIn("reused", second.stdout)

            # An interrupted experiment (its stamp still "running") runs again and continues.
            stamp_path = os.path.join(out, "norm_invariance-tiny", "reproduce.json")
            with open(stamp_path, encoding="utf-8") as f:
                stamp = json.load(f)
            stamp["state"] = "running"
            with open(stamp_path, "w", encoding="utf-8") as f:
                json.dump(stamp, f)
            third = self.reproduce("--corpus", corpus, "--out", out, "invariance")
            self.assertEqual(0, third.returncode, third.stdout + third.stderr)
            self.assertIn("invariance: continuing the interrupted run", third.stdout)
            with open(stamp_path, encoding="utf-8") as f:
                self.assertEqual("done", json.load(f)["state"])

    def test_bad_flags_stop_before_any_work(self):
        with tempfile.TemporaryDirectory() as scratch:
            for arguments, message in (
                    (["nothing"], "unknown experiment 'nothing'"),
                    (["--device", "gpu"], "--device must be cpu or cuda"),
                    (["--corpus", scratch, "gru"], "lacks train.en"),
                    (["--threads", "0"], "--threads must be positive"),
                    (["--precision", "float16"], "--precision: invalid choice"),
                    (["--budget", "paper", "cnn"], "give it CIFAR-10 with --cifar10"),
                    (["--budget", "paper", "reader"], "give it the CNN corpus with "
                                                      "--cnn-questions"),
                    (["--cnn-questions", scratch, "reader"], "has no questions/ folder")):
                result = self.reproduce("--out", os.path.join(scratch, "out"), *arguments)
                self.assertEqual(2, result.returncode, arguments)
                self.assertIn(message, result.stderr)
            self.assertFalse(os.path.exists(os.path.join(scratch, "out")))


if __name__ == "__main__":
    unittest.main()
