"""Keyboard accelerator markers: chosen per package, removed, identifiers left alone."""

import unittest

from corpus.accel import candidates, choose_markers, strip_accelerators, vocabulary


class StripTest(unittest.TestCase):
    def test_markers_removed_on_both_sides(self):
        self.assertEqual(strip_accelerators("_Save As…", "Speichern _unter …", ("_",)),
                         ("Save As…", "Speichern unter …"))
        self.assertEqual(strip_accelerators("&Open", "Ö&ffnen", ("&",)), ("Open", "Öffnen"))
        self.assertEqual(strip_accelerators("E~xport", "E~xportieren", ("~",)),
                         ("Export", "Exportieren"))

    def test_marker_kept_in_a_word_copied_unchanged(self):
        self.assertEqual(strip_accelerators("_Unicode Characters", "_Unicode-Zeichen", ("_",)),
                         ("Unicode Characters", "Unicode-Zeichen"))
        self.assertEqual(strip_accelerators("_X axis", "_X-Achse", ("_",)), ("X axis", "X-Achse"))

    def test_marker_at_word_start_with_punctuation(self):
        self.assertEqual(strip_accelerators("_Find/Replace...", "_Suchen/Ersetzen …",
                                            ("_",)),
                         ("Find/Replace...", "Suchen/Ersetzen …"))

    def test_identifiers_kept(self):
        for english, german in (("Set FOO_BAR first", "Zuerst FOO_BAR setzen"),
                                ("io_channel failed", "io_channel ist gescheitert"),
                                ("AT&T modem", "AT&T-Modem"),
                                ("open file_name.txt", "file_name.txt öffnen"),
                                ("see ?a=1&b=2", "siehe ?a=1&b=2"),
                                ("use _N/_P suffixes", "Endungen _N/_P verwenden")):
            self.assertEqual(strip_accelerators(english, german, ("_", "&")),
                             (english, german), english)

    def test_snake_case_needs_the_joined_word_in_the_package(self):
        words = vocabulary([("Reload", "Neu laden"), ("Report", "Bericht")])
        self.assertEqual(strip_accelerators("Re_load", "_Neu laden", ("_",), words),
                         ("Reload", "Neu laden"))
        self.assertEqual(strip_accelerators("missing `default_missing'",
                                            "»default_missing« fehlt", ("_",), words),
                         ("missing `default_missing'", "»default_missing« fehlt"))
        self.assertEqual(strip_accelerators("bad fs_type", "falscher Typ", ("_",), words),
                         ("bad fs_type", "falscher Typ"))
        # recapitalised by the translator, still the same identifier
        self.assertEqual(strip_accelerators("i_blocks is %d", "i_Blocks ist %d", ("_",), words),
                         ("i_blocks is %d", "i_Blocks ist %d"))

    def test_quoted_word_with_a_leading_marker(self):
        self.assertEqual(strip_accelerators("'_Atomic' qualifier", "'_Atomic'-Qualifizierer",
                                            ("_",)),
                         ("'_Atomic' qualifier", "'_Atomic'-Qualifizierer"))

    def test_escaped_marker_and_entity_are_not_candidates(self):
        self.assertEqual(candidates("Drag && Drop", "&"), [])
        self.assertEqual(candidates("Tom &amp; Jerry", "&"), [])
        self.assertEqual(candidates("~/path and a ~ b", "~"), [])

    def test_several_candidates_on_a_line_left_alone(self):
        self.assertEqual(strip_accelerators("_a_b", "_c_d", ("_",)), ("_a_b", "_c_d"))

    def test_one_marker_per_line(self):
        english = "&Open Read-Only\n&Edit anyway\n&Quit"
        german = "&Nur lesen\n&Trotzdem editieren\n&Beenden"
        self.assertEqual(strip_accelerators(english, german, ("&",)),
                         ("Open Read-Only\nEdit anyway\nQuit",
                          "Nur lesen\nTrotzdem editieren\nBeenden"))

    def test_unchosen_marker_untouched(self):
        self.assertEqual(strip_accelerators("_Save", "_Speichern", ("&",)),
                         ("_Save", "_Speichern"))


class ChooseTest(unittest.TestCase):
    def test_declared_marker_kept(self):
        self.assertEqual(choose_markers([("Print", "Drucken")], ("~",)), ("~",))

    def test_share_threshold(self):
        plain = [(f"Message {i}", f"Nachricht {i}") for i in range(997)]
        labels = [("_Save", "_Speichern"), ("_Open", "Ö_ffnen"), ("_Quit", "_Beenden")]
        self.assertEqual(choose_markers(plain + labels), ("_",))  # 3 of 1000 = 0.3%
        self.assertEqual(choose_markers(plain + plain[:10] + labels), ())
        kde = [("&Open", "Ö&ffnen")] * 10 + plain
        self.assertEqual(choose_markers(kde), ("&",))

    def test_identifiers_do_not_choose_a_marker(self):
        code = [("set io_channel", "io_channel setzen")] * 50
        self.assertEqual(choose_markers(code), ())


if __name__ == "__main__":
    unittest.main()
