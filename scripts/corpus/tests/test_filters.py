"""The filters, each rule, in order; duplicates counted only against kept pairs."""

import unittest

from corpus.filters import REASONS, PairFilter


class FilterTest(unittest.TestCase):
    def reason(self, english, german):
        return PairFilter().reason(english, german)

    def test_each_rule(self):
        self.assertEqual(self.reason("Open", ""), "empty")
        self.assertEqual(self.reason("translator-credits", "Max Mustermann"), "credits")
        self.assertEqual(self.reason("%s: %s", "%s: %s"), "no_two_letter_word")
        self.assertEqual(self.reason("1:1", "1:1 Ansicht"), "no_two_letter_word")
        self.assertEqual(self.reason("Gamma", "Gamma"), "identical")
        self.assertEqual(self.reason("C64 sid demuxer", "C64 SID Demuxer"), "untranslated")
        self.assertEqual(self.reason("Open the file", "Open the file (Datei öffnen)"),
                         "untranslated")
        long_en = " ".join(["word"] * 81)
        self.assertEqual(self.reason(long_en, " ".join(["Wort"] * 81)), "too_long")
        self.assertEqual(self.reason("OK", "Die Operation wurde erfolgreich abgeschlossen"),
                         "length_ratio")
        self.assertIsNone(self.reason("Open file", "Datei öffnen"))
        self.assertIsNone(self.reason("OK", "Ok"))

    def test_duplicates_within_and_across_packages(self):
        pair_filter = PairFilter()
        pair_filter.start_package()
        self.assertTrue(pair_filter.keep("Open", "Öffnen"))
        self.assertFalse(pair_filter.keep("Open", "Öffnen"))
        self.assertFalse(pair_filter.keep("Gamma", "Gamma"))
        self.assertFalse(pair_filter.keep("Gamma", "Gamma"))  # dropped pairs are not "seen"
        pair_filter.start_package()
        self.assertFalse(pair_filter.keep("Open", "Öffnen"))
        self.assertTrue(pair_filter.keep("Open", "Aufmachen"))
        self.assertEqual(pair_filter.counts["duplicate_in_package"], 1)
        self.assertEqual(pair_filter.counts["duplicate_of_earlier_package"], 1)
        self.assertEqual(pair_filter.counts["identical"], 2)
        self.assertEqual(list(pair_filter.counts), list(REASONS))


if __name__ == "__main__":
    unittest.main()
