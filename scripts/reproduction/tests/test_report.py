"""REPORT.md from experiment folders written by hand: the run's table, the claims, the index
of the paper's tables and every experiment's own report taken in with its links mended."""

import os
import tempfile
import unittest

from reproduction import report
from reproduction.experiments import EXPERIMENTS, Inputs, by_name


class EmbedTest(unittest.TestCase):
    def test_headings_go_one_level_down_and_local_links_into_the_folder(self):
        markdown = ("# Title\n\ntext with [a link](https://example.org) and [notes](#anchor)\n"
                    "## Part\n![curves](post_norm.png)\n[settings](runs/none/config.json)\n"
                    "![absolute](/tmp/x.png)\n")
        text = report.embed(markdown, "transformer_nmt")
        self.assertIn("## Title\n", text)
        self.assertIn("### Part\n", text)
        self.assertIn("![curves](transformer_nmt/post_norm.png)", text)
        self.assertIn("[settings](transformer_nmt/runs/none/config.json)", text)
        self.assertIn("[a link](https://example.org)", text)
        self.assertIn("[notes](#anchor)", text)
        self.assertIn("![absolute](/tmp/x.png)", text)

    def test_anchors_as_github_makes_them(self):
        self.assertEqual("the-transformer-with-each-normaliser-the-rmsnorm-papers-table-4",
                         report._anchor("The Transformer with each normaliser: the RMSNorm "
                                        "paper's Table 4"))


class WriteReportTest(unittest.TestCase):
    def test_a_report_of_two_experiments_run_and_three_not(self):
        with tempfile.TemporaryDirectory() as out:
            inputs = Inputs(build="/build", out=out, budget="demo", device="cpu", threads=2,
                            corpus="/corpus", cifar10=None)
            outcomes = []
            for experiment in EXPERIMENTS:
                folder = experiment.output(inputs)
                if experiment.name in ("invariance", "transformer"):
                    os.makedirs(folder)
                    with open(os.path.join(folder, "report.md"), "w", encoding="utf-8") as f:
                        f.write(f"# The {experiment.name} report\n\n![figure](figure.png)\n")
                    outcomes.append(report.Outcome(experiment, folder, "ran", 125.0))
                else:
                    outcomes.append(report.Outcome(experiment, folder, "not run", None))
            path = os.path.join(out, "REPORT.md")
            text = report.write_report(path, inputs, "abc123", outcomes, "/repository")
            with open(path, encoding="utf-8") as f:
                self.assertEqual(text, f.read())
        self.assertIn("budget demo (", text)
        self.assertIn("2 threads", text)
        self.assertIn("source version `abc123`", text)
        self.assertNotIn("mixed precision", text)
        self.assertIn("| transformer: ", text)
        self.assertIn("| ran | 2.1 min | `transformer_nmt` |", text)
        self.assertIn("| not run | – | `gru_nmt` |", text)
        self.assertIn("The experiments' time in all: 4.2 min.", text)
        self.assertIn("## The paper's claims, and what this run shows", text)
        self.assertIn("| Table 4 | [The transformer report](#the-transformer-report) |", text)
        self.assertIn("| Table 1 | [The invariance report](#the-invariance-report) |", text)
        self.assertIn("| Table 2 | not run: `scripts/reproduce gru` |", text)
        self.assertIn("| Table 10 | not run: `scripts/reproduce cnn` |", text)
        self.assertIn("| Table 6 | not run: `scripts/reproduce reader` |", text)
        self.assertIn("| Figure 3 | not reproduced: ", text)
        self.assertIn("## The transformer report\n\n![figure](transformer_nmt/figure.png)", text)
        self.assertNotIn("The gru report", text)

    def test_every_budget_but_demo_has_its_own_folders(self):
        inputs = Inputs(build="/b", out="/out", budget="long", device="cpu", threads=None,
                        corpus="/c", cifar10=None)
        self.assertEqual("/out/gru_nmt-long", by_name("gru").output(inputs))
        command = by_name("gru").command(inputs)
        self.assertEqual("/b/examples/gru_nmt/gru_nmt", command[0])
        self.assertIn("--budget", command)
        self.assertEqual("small", command[command.index("--preset") + 1])
        self.assertNotIn("--precision", command)

    def test_mixed_precision_goes_to_the_programs_that_take_it_in_folders_of_their_own(self):
        inputs = Inputs(build="/b", out="/out", budget="demo", device="cuda", threads=None,
                        corpus="/c", cifar10=None, precision="bfloat16")
        for name, folder in (("gru", "gru_nmt"), ("transformer", "transformer_nmt"),
                             ("cnn", "convpool_cnn_c")):
            command = by_name(name).command(inputs)
            self.assertEqual("bfloat16", command[command.index("--precision") + 1], name)
            self.assertEqual(f"/out/{folder}-bfloat16", by_name(name).output(inputs))
        # The others have no mixed precision: float32, in their usual folders.
        for name in ("invariance", "mlp", "oe", "reader"):
            self.assertNotIn("--precision", by_name(name).command(inputs), name)
            self.assertEqual("float32", by_name(name).precision(inputs))
        self.assertEqual("/out/order_embedding", by_name("oe").output(inputs))
        # The report names the experiments that ran in mixed precision.
        with tempfile.TemporaryDirectory() as out:
            inputs = Inputs(build="/b", out=out, budget="demo", device="cuda", threads=None,
                            corpus="/c", cifar10=None, precision="bfloat16")
            outcomes = [report.Outcome(e, e.output(inputs),
                                       "ran" if e.name in ("cnn", "oe") else "not run", 60.0)
                        for e in EXPERIMENTS]
            text = report.write_report(os.path.join(out, "REPORT.md"), inputs, "abc123",
                                       outcomes, "/repository")
        self.assertIn("; mixed precision (bfloat16 activations, float32 parameters) in cnn;",
                      text)


if __name__ == "__main__":
    unittest.main()


class ExistingOutcomeTest(unittest.TestCase):
    def test_finished_results_of_another_version_are_reported_as_such(self):
        from reproduction import main, stamps
        with tempfile.TemporaryDirectory() as out:
            inputs = Inputs(build="/b", out=out, budget="demo", device="cpu", threads=None,
                            corpus="/c", cifar10=None)
            experiment = by_name("invariance")
            folder = experiment.output(inputs)
            self.assertEqual("not run", main.existing_outcome(experiment, inputs, "v2").state)
            key = stamps.make_key("v1", "demo", "cpu", experiment.command(inputs))
            stamps.write_stamp(folder, key, "running", 3.0)
            self.assertEqual("not run", main.existing_outcome(experiment, inputs, "v1").state)
            stamps.write_stamp(folder, key, "done", 3.0)
            self.assertEqual("reused", main.existing_outcome(experiment, inputs, "v1").state)
            self.assertEqual("reused, of version v1",
                             main.existing_outcome(experiment, inputs, "v2").state)
            other = Inputs(build="/b", out=out, budget="demo", device="cuda", threads=None,
                           corpus="/c", cifar10=None)
            stamps.write_stamp(folder, stamps.make_key("v1", "demo", "cuda",
                                                       experiment.command(other)), "done")
            self.assertEqual("not run", main.existing_outcome(experiment, inputs, "v2").state)
