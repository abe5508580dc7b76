"""The claim sentences on tables written by hand: each verdict, and the cases too weak for one."""

import os
import tempfile
import unittest

from reproduction import claims

NMT_HEADER = ("run,norm,steps,parameters,test_bleu,test_bleu_mean,test_bleu_interval,"
              "p_against_layernorm,best_dev_bleu,seconds_per_1000_steps,spread,"
              "speedup_over_layernorm_percent,other_processes_cpu,trained")


def nmt_row(run, bleu, p, seconds, spread, trained="yes", others="0.000", interval="1.40"):
    return dict(zip(NMT_HEADER.split(","),
                    [run, run, "100", "1000", bleu, bleu, interval, p, bleu, seconds, spread,
                     "", others, trained]))


class BleuFindingTest(unittest.TestCase):
    def test_a_small_difference_with_a_large_p_is_consistent_but_not_proof(self):
        rows = [nmt_row("layernorm", "17.84", "", "255.7", "37.5"),
                nmt_row("rmsnorm", "18.11", "0.1329", "230.4", "25.3")]
        text = claims.bleu_finding(rows, "Transformer", "rmsnorm", "RMSNorm")
        self.assertIn("RMSNorm 18.11 BLEU, LayerNorm 17.84 (+0.27)", text)
        self.assertIn("not significant (p = 0.13)", text)
        self.assertIn("±1.4 BLEU", text)

    def test_a_significant_difference_names_the_better_side(self):
        rows = [nmt_row("layernorm", "17.84", "", "255.7", "37.5"),
                nmt_row("prmsnorm:0.0625", "16.06", "0.0010", "214.9", "23.3")]
        text = claims.bleu_finding(rows, "Transformer", "prmsnorm", "pRMSNorm")
        self.assertIn("significant (p = 0.001)", text)
        self.assertIn("pRMSNorm worse in this run", text)

    def test_low_scores_decide_nothing(self):
        rows = [nmt_row("layernorm", "0.40", "", "1", "0"),
                nmt_row("rmsnorm", "4.10", "0.0010", "1", "0")]
        text = claims.bleu_finding(rows, "RNNSearch", "rmsnorm", "RMSNorm")
        self.assertIn("both below 5 BLEU: too short to decide", text)
        self.assertNotIn("significant", text)

    def test_a_run_that_did_not_learn_is_said_so(self):
        rows = [nmt_row("layernorm", "5.0", "", "1", "0", trained="did not learn"),
                nmt_row("rmsnorm", "6.0", "0.5", "1", "0")]
        self.assertIn("LayerNorm did not learn in this run; too short to decide",
                      claims.bleu_finding(rows, "RNNSearch", "rmsnorm", "RMSNorm"))
        rows = [nmt_row("layernorm", "5.0", "", "1", "0"),
                nmt_row("none", "0.0", "0.001", "1", "0", trained="diverged at step 40")]
        self.assertIn("no norm diverged at step 40 in this run, while LayerNorm learned",
                      claims.bleu_finding(rows, "Transformer", "none", "no norm"))

    def test_rows_are_found_by_their_norm_not_their_label(self):
        rows = [nmt_row("layernorm", "18.62", "", "225.6", "23.7"),
                nmt_row("rmsnorm", "18.04", "0.0340", "232.8", "20.3")]
        rows[0]["run"], rows[1]["run"] = "layernorm, pre-norm", "rmsnorm, pre-norm"
        text = claims.bleu_finding(rows, "Pre-norm", "rmsnorm", "RMSNorm")
        self.assertIn("RMSNorm 18.04 BLEU, LayerNorm 18.62 (-0.58)", text)
        self.assertIn("significant (p = 0.034)", text)

    def test_a_missing_row_is_named(self):
        rows = [nmt_row("layernorm", "5.0", "", "1", "0")]
        self.assertIn("no L2-norm or no LayerNorm run",
                      claims.bleu_finding(rows, "RNNSearch", "l2norm", "L2-norm"))


class ErrorFindingTest(unittest.TestCase):
    def rows(self, error_ln, error, images):
        return [{"norm": "layernorm", "test_error": str(error_ln), "test_images": str(images)},
                {"norm": "rmsnorm", "test_error": str(error), "test_images": str(images)}]

    def test_a_difference_beyond_the_test_sets_chance(self):
        # 0.133 and 0.162 over 5000 images: the interval's half-width is
        # 1.96 * sqrt((0.162 * 0.838 + 0.133 * 0.867) / 5000) = 1.389 points.
        text = claims.error_finding(self.rows(0.133, 0.162, 5000), "CNN", "rmsnorm", "RMSNorm")
        self.assertIn("RMSNorm 16.20% test error, LayerNorm 13.30% (+2.90 points)", text)
        self.assertIn("beyond the ±1.39 points that 5000 test images leave to chance", text)
        self.assertIn("error higher", text)

    def test_a_difference_within_it(self):
        text = claims.error_finding(self.rows(0.133, 0.14, 500), "CNN", "rmsnorm", "RMSNorm")
        self.assertIn("within the ±4.26 points", text)
        self.assertIn("consistent with equal quality", text)


class ReaderErrorFindingTest(unittest.TestCase):
    def rows(self, error_ln, error, frequent):
        return [{"norm": "layernorm", "test_error": str(error_ln), "test_questions": "2000",
                 "test_frequent_error": str(frequent)},
                {"norm": "none", "test_error": str(error), "test_questions": "2000",
                 "test_frequent_error": str(frequent)}]

    def test_questions_count_the_chance(self):
        # 1.96 sqrt((0.3 0.7 + 0.25 0.75) / 2000) = 2.763 points
        text = claims.error_finding(self.rows(0.25, 0.30, 0.5), "Reader", "none", "no norm",
                                    "questions")
        self.assertIn("no norm 30.00% test error, LayerNorm 25.00% (+5.00 points)", text)
        self.assertIn("beyond the ±2.76 points that 2000 test questions leave to chance", text)

    def test_runs_no_better_than_counting_decide_nothing(self):
        text = claims.error_finding(self.rows(0.52, 0.55, 0.51), "Reader", "none", "no norm",
                                    "questions")
        self.assertIn("neither below the 51.00% of answering with the most frequent entity: "
                      "too short to decide", text)


class SpeedFindingTest(unittest.TestCase):
    def test_spreads_that_do_not_overlap(self):
        text = claims.speed_finding("GRU", "RMSNorm", claims.Timing(100, 95, 105, 0),
                                    claims.Timing(80, 78, 82, 0), "s / 1k steps", 24.7)
        self.assertIn("RMSNorm 80.0 s / 1k steps, LayerNorm 100.0, a speed-up of 20.0% "
                      "(paper: 24.7%)", text)
        self.assertIn("do not overlap", text)

    def test_overlapping_spreads_are_weak_evidence(self):
        rows = [nmt_row("layernorm", "17.84", "", "255.7", "37.5"),
                nmt_row("rmsnorm", "18.11", "0.1329", "230.4", "25.3", others="0.207")]
        text = claims.nmt_speed_finding(rows, "Transformer", "rmsnorm", "RMSNorm", 6.9)
        self.assertIn("a speed-up of 9.9% (paper: 6.9%)", text)
        self.assertIn("weak evidence from one run", text)
        self.assertIn("other processes took up to 21% of the CPU", text)

    def test_slower_is_said_plainly(self):
        text = claims.speed_finding("CNN", "RMSNorm", claims.Timing(100, 99, 101, 0),
                                    claims.Timing(110, 109, 111, 0), "s / epoch", None)
        self.assertIn("a speed-up of -10.0%", text)
        self.assertIn("RMSNorm is not faster in this run", text)

    def test_single_measurements_have_no_spread_to_judge_by(self):
        rows = [{"norm": "layernorm", "batch_size": "128", "ms_per_step": "16.5"},
                {"norm": "rmsnorm", "batch_size": "128", "ms_per_step": "15.5"},
                {"norm": "rmsnorm", "batch_size": "4", "ms_per_step": "6.8"}]
        text = claims.mlp_speed_finding(rows, "128")
        self.assertIn("The MLP at batch 128: RMSNorm 15.5 ms / step, LayerNorm 16.5", text)
        self.assertIn("one measurement each, without a spread to judge it by", text)
        self.assertIn("no RMSNorm or no LayerNorm timing", claims.mlp_speed_finding(rows, "4"))

    def test_the_cnn_spread_is_the_range_over_the_median(self):
        rows = [{"norm": "layernorm", "seconds_per_epoch": "200", "seconds_spread": "0.1"},
                {"norm": "rmsnorm", "seconds_per_epoch": "180", "seconds_spread": "0.1"}]
        # 200 +- 10 and 180 +- 9: 189 < 190, no overlap.
        self.assertIn("do not overlap", claims.cnn_speed_finding(rows, "rmsnorm", "RMSNorm", 20.5))


OE_HEADER = ("norm,caption_r1,caption_r5,caption_r10,caption_mean_rank,image_r1,image_r5,"
             "image_r10,image_mean_rank,test_images,test_captions,best_step,"
             "seconds_per_100_steps,seconds_spread,saving_over_layernorm,other_cpu")


def oe_row(norm, caption_r1, image_r1, captions, seconds, spread, others=""):
    values = [norm, caption_r1, "", "", "", image_r1, "", "", "", captions, captions, "600",
              seconds, spread, "", others]
    return dict(zip(OE_HEADER.split(","), values))


class RecallFindingTest(unittest.TestCase):
    def test_a_difference_beyond_what_the_queries_leave_to_chance(self):
        rows = [oe_row("layernorm", "40.5", "37.4", "5000", "14.25", "0.1"),
                oe_row("none", "40.7", "33.7", "5000", "10.05", "0.1")]
        text = claims.recall_finding(rows, "Order embeddings", "none", "no norm")
        self.assertIn("no norm image R@1 33.7, LayerNorm 37.4 (-3.7 points; caption R@1 40.7 "
                      "against 40.5)", text)
        # 1.96 sqrt((0.337 0.663 + 0.374 0.626) / 5000) = 1.9 points
        self.assertIn("beyond the ±1.9 points that 5000 queries leave to chance: no norm's "
                      "recall lower", text)

    def test_a_difference_within_it(self):
        rows = [oe_row("layernorm", "40.5", "37.4", "5000", "14.25", "0.1"),
                oe_row("rmsnorm", "41.7", "38.2", "5000", "14.15", "0.1")]
        text = claims.recall_finding(rows, "Order embeddings", "rmsnorm", "RMSNorm")
        self.assertIn("within the ±1.9 points", text)
        self.assertIn("consistent with equal quality", text)

    def test_no_retrieval_yet_decides_nothing(self):
        rows = [oe_row("layernorm", "0.2", "0.1", "400", "1", "0"),
                oe_row("rmsnorm", "0.5", "0.8", "400", "1", "0")]
        self.assertIn("too short to decide",
                      claims.recall_finding(rows, "OE", "rmsnorm", "RMSNorm"))

    def test_the_speed_spread_is_the_range_over_the_median(self):
        rows = [oe_row("layernorm", "40.5", "37.4", "5000", "14.0", "0.1", "0.036"),
                oe_row("prmsnorm:0.0625", "42.7", "40.1", "5000", "11.0", "0.1", "0.0")]
        text = claims.per_100_steps_speed_finding(rows, "Order embeddings", "prmsnorm",
                                                  "pRMSNorm", 63.9)
        self.assertIn("pRMSNorm 11.0 s / 100 steps, LayerNorm 14.0, a speed-up of 21.4% "
                      "(paper: 63.9%)", text)
        self.assertIn("the spreads of the two times do not overlap", text)


class ReaderSpeedTest(unittest.TestCase):
    def test_the_paper_sizes_timing_is_preferred(self):
        with tempfile.TemporaryDirectory() as folder:
            with open(os.path.join(folder, "table6.csv"), "w", encoding="utf-8") as f:
                f.write("norm,test_error,test_questions,seconds_per_100_steps,seconds_spread\n"
                        "layernorm,0.3,2000,7.5,0.2\nrmsnorm,0.3,2000,7.9,0.2\n")
            with open(os.path.join(folder, "table6_paper_sizes.csv"), "w",
                      encoding="utf-8") as f:
                f.write("norm,seconds_per_100_steps,spread,timed_steps\n"
                        "layernorm,100,0.1,10\nrmsnorm,80,0.1,10\n")
            speed = claims.claims({"reader": folder})[1]
            finding = [f for f in speed.findings if f.startswith("The attentive reader")]
            # 100 +- 5 against 80 +- 4: apart.
            self.assertEqual(["The attentive reader at the paper's sizes: RMSNorm 80.0 s / 100 "
                              "steps, LayerNorm 100.0, a speed-up of 20.0% (paper: 15.1%); the "
                              "spreads of the two times do not overlap."], finding)


class InvarianceFindingTest(unittest.TestCase):
    def test_agreement_and_a_difference(self):
        rows = [{"method": "RMSNorm", "transformation": "dataset re-scaling", "invariant": "yes",
                 "paper": "yes"},
                {"method": "LayerNorm", "transformation": "weight matrix re-centering",
                 "invariant": "yes", "paper": "yes"}]
        self.assertIn("All 2 cells measured agree", claims.invariance_finding(rows))
        rows[1]["invariant"] = "no"
        text = claims.invariance_finding(rows)
        self.assertIn("1 of 2 cells agree", text)
        self.assertIn("LayerNorm, weight matrix re-centering: measured no, paper yes", text)


class ClaimsTest(unittest.TestCase):
    def test_every_claim_names_what_was_not_run(self):
        listed = claims.claims({})
        self.assertEqual(6, len(listed))
        for claim in listed:
            self.assertTrue(claim.findings, claim.title)
            for finding in claim.findings:
                self.assertIn("not run (`scripts/reproduce ", finding)

    def test_findings_come_from_the_experiments_csv_files(self):
        with tempfile.TemporaryDirectory() as folder:
            with open(os.path.join(folder, "table4.csv"), "w", encoding="utf-8") as f:
                f.write(NMT_HEADER + "\n")
                for row in (nmt_row("none", "0.00", "0.0010", "210", "5", "did not learn"),
                            nmt_row("layernorm", "17.84", "", "255.7", "37.5"),
                            nmt_row("rmsnorm", "18.11", "0.1329", "230.4", "25.3")):
                    f.write(",".join(row[c] for c in NMT_HEADER.split(",")) + "\n")
            text = claims.markdown(claims.claims({"transformer": folder}))
        self.assertIn("1. **RMSNorm's quality matches LayerNorm's.**", text)
        self.assertIn("Transformer (Table 4): RMSNorm 18.11 BLEU", text)
        self.assertIn("the Transformer without a norm did not learn", text)
        self.assertIn("RNNSearch (Table 2): not run (`scripts/reproduce gru`)", text)


if __name__ == "__main__":
    unittest.main()
