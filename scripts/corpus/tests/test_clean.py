"""The cleaning rules one by one: gcc quoting, markup, whitespace, placeholders."""

import unittest

from corpus.clean import after_markup, before_accelerators, gcc_quoting, normalize_whitespace
from corpus.markup import strip_markup
from corpus.placeholders import normalize


class GccQuotingTest(unittest.TestCase):
    def test_quotes_urls_apostrophes(self):
        self.assertEqual(gcc_quoting("%<#pragma%> is ignored"), "'#pragma' is ignored")
        self.assertEqual(gcc_quoting("see %{the manual%}"), "see the manual")
        self.assertEqual(gcc_quoting("isn%'t valid"), "isn't valid")

    def test_sysdep_placeholder_is_not_a_quote(self):
        self.assertEqual(gcc_quoting("%<PRIuMAX> bytes in %<x%>"), "%<PRIuMAX> bytes in 'x'")
        self.assertEqual(gcc_quoting("%5<PRIdMAX> of %<PRIuMAX>"), "%5<PRIdMAX> of %<PRIuMAX>")

    def test_printf_grouping_flag_untouched(self):
        self.assertEqual(gcc_quoting("%'d files"), "%'d files")


class MarkupTest(unittest.TestCase):
    def test_closing_tag_makes_markup(self):
        self.assertEqual(strip_markup("<b>Warning:</b> disk full"), "Warning: disk full")

    def test_attributes_make_markup_and_entities_decoded(self):
        self.assertEqual(strip_markup('<span weight="bold">Tom &amp; Jerry</span>'),
                         "Tom & Jerry")
        self.assertEqual(strip_markup('See <a href="https://x">the site</a>'),
                         "See the site")

    def test_html_only_tags_without_closing(self):
        self.assertEqual(strip_markup("First<br>second<p>third"), "First second third")
        self.assertEqual(strip_markup("<qt>Rich text"), " Rich text")

    def test_metavariables_kept(self):
        for usage in ("cp <file> <dir>", "<command> [options]", "Usage: <filename>",
                      "if a < b and c > d"):
            self.assertEqual(strip_markup(usage), usage)

    def test_metavariable_kept_beside_markup(self):
        self.assertEqual(strip_markup("<b>Usage:</b> cp <file> &lt;dir&gt;"),
                         "Usage: cp <file> <dir>")

    def test_entities_only_where_there_is_markup(self):
        self.assertEqual(strip_markup("join &lt;room&gt;"), "join <room>")  # escaped text
        self.assertEqual(strip_markup("R&D; &Open"), "R&D; &Open")  # not entities


class WhitespaceTest(unittest.TestCase):
    def test_space_like_characters_and_invisibles(self):
        text = "Line one\nline\ttwo\u00a0three\u2028four\r\n five\u00ad\u200bsix\x07"
        self.assertEqual(normalize_whitespace(text), "Line one line two three four fivesix")

    def test_joined_not_split(self):
        self.assertEqual(normalize_whitespace("\n\nKrita will quit now.\n"),
                         "Krita will quit now.")


class PlaceholderTest(unittest.TestCase):
    def check(self, text, expected, numbers, others):
        self.assertEqual(normalize(text), (expected, numbers, others))

    def test_printf(self):
        self.check("%1$s copied %-10s (%lu bytes, %5.1f%%)", "%s copied %s (%d bytes, %d%)", 2, 2)
        self.check("%<PRIuMAX> records", "%d records", 1, 0)
        self.check("%c and %p", "%s and %s", 0, 2)

    def test_other_formats(self):
        self.check("%(count)d of %(name)s", "%d of %s", 1, 1)
        self.check("%1 of %2, %L3 total", "%s of %s, %d total", 1, 2)
        self.check("{0} and {name} and {}", "%s and %s and %s", 0, 3)
        self.check("$(ARG1) in ${HOME}", "%s in %s", 0, 2)
        self.check("see ~a for ~s", "see %s for %s", 0, 2)

    def test_text_that_is_not_a_placeholder(self):
        self.check("100% sure, 50 % done", "100% sure, 50 % done", 0, 0)
        self.check("~/.config and ~auto", "~/.config and ~auto", 0, 0)


class PipelineTest(unittest.TestCase):
    def clean(self, english, german, markers=()):
        return after_markup(before_accelerators(english), before_accelerators(german), markers)

    def test_all_rules_in_order(self):
        self.assertEqual(self.clean("<b>_Save %1$s</b>\nnow", "<b>%1$s _speichern</b>\njetzt",
                                    ("_",)),
                         ("Save %s now", "%s speichern jetzt"))

    def test_placeholder_count_mismatch_dropped(self):
        self.assertIsNone(self.clean("%d file", "Eine Datei"))
        self.assertIsNone(self.clean("%s of %d", "%s von %s"))
        self.assertEqual(self.clean("%s of %d", "%d von %s"), ("%s of %d", "%d von %s"))


if __name__ == "__main__":
    unittest.main()
