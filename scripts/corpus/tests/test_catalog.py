"""Reading catalogs: .mo and .po files, headers, contexts, plurals, charsets."""

import unittest

from corpus.catalog import load_catalog, raw_pairs, strip_stuffed_context
from corpus.mo import MoError, read_mo
from corpus.po import PoError, read_po
from corpus.tests.fixtures import message, mo_bytes


class MoTest(unittest.TestCase):
    def test_context_plural_and_header(self):
        data = mo_bytes([message("Open", "Öffnen"),
                         message("Name", "Bezeichnung", context="column"),
                         message("%d file", ["%d Datei", "%d Dateien"], plural="%d files")],
                        extra_header="X-Accelerator-Marker: ~\n")
        catalog = load_catalog(data, "x/de/LC_MESSAGES/test.mo")
        self.assertEqual(catalog.headers["X-Accelerator-Marker"], "~")
        by_id = {e.msgid: e for e in catalog.entries}
        self.assertEqual(by_id["Name"].context, "column")
        self.assertEqual(by_id["%d file"].msgid_plural, "%d files")
        self.assertEqual(sorted(raw_pairs(catalog)),
                         [("%d file", "%d Datei"), ("%d files", "%d Dateien"),
                          ("Name", "Bezeichnung"), ("Open", "Öffnen")])

    def test_header_charset_iso_8859_1(self):
        data = mo_bytes([message("Quit", "Schließen")], charset="ISO-8859-1")
        self.assertIn(b"Schlie\xdfen", data)  # one byte, not UTF-8's two
        catalog = load_catalog(data, "vim.mo")
        self.assertEqual(raw_pairs(catalog), [("Quit", "Schließen")])

    def test_big_endian_and_system_dependent_strings(self):
        data = mo_bytes([message("Open", "Öffnen")], big_endian=True,
                        sysdep=[(["%", ("segment", "PRIuMAX"), " bytes"],
                                 ["%", ("segment", "PRIuMAX"), " Bytes"])])
        self.assertIn((b"%<PRIuMAX> bytes", b"%<PRIuMAX> Bytes"), read_mo(data))
        self.assertIn(("%<PRIuMAX> bytes", "%<PRIuMAX> Bytes"),
                      raw_pairs(load_catalog(data, "coreutils.mo")))

    def test_empty_translation_skipped(self):
        data = mo_bytes([message("Open", ""), message("%d dir", ["%d Ordner", ""],
                                                      plural="%d dirs")])
        self.assertEqual(raw_pairs(load_catalog(data, "t.mo")), [("%d dir", "%d Ordner")])

    def test_not_a_catalog(self):
        with self.assertRaises(MoError):
            read_mo(b"\x00" * 40, "bad.mo")
        with self.assertRaises(MoError):
            read_mo(mo_bytes([message("Open", "Öffnen")])[:60], "truncated.mo")


PO = r'''# German translation
msgid ""
msgstr ""
"Content-Type: text/plain; charset=ISO-8859-1\n"
"Plural-Forms: nplurals=2; plural=(n != 1);\n"

#: src/main.c:10
msgctxt "menu"
msgid "_Open"
msgstr "_\326ffnen"

#, fuzzy
msgid "Close"
msgstr "Schlie\337en"

msgid "Untranslated"
msgstr ""

msgid ""
"Line one\n"
"\tline \"two\"\x21"
msgstr "Zeile eins\nZeile \"zwei\"!"

#, c-format
msgid "%d file"
msgid_plural "%d files"
msgstr[0] "%d Datei"
msgstr[1] "%d Dateien"

#~ msgid "Obsolete"
#~ msgstr "Veraltet"
'''


class PoTest(unittest.TestCase):
    def test_entries_escapes_fuzzy_obsolete_empty(self):
        data = PO.encode("latin-1").replace(b"\\326", b"\xd6")  # a raw Latin-1 byte
        catalog = load_catalog(data, "x/de/LC_MESSAGES/test.po")
        pairs = raw_pairs(catalog)
        self.assertEqual(pairs, [("_Open", "_Öffnen"),
                                 ("Line one\n\tline \"two\"!", "Zeile eins\nZeile \"zwei\"!"),
                                 ("%d file", "%d Datei"), ("%d files", "%d Dateien")])
        self.assertEqual(catalog.entries[0].context, "menu")

    def test_octal_escape_is_a_byte(self):
        pairs = read_po(b'msgid "a"\nmsgstr "\\303\\226"\n')
        self.assertEqual(pairs, [(b"a", b"\xc3\x96")])

    def test_malformed(self):
        with self.assertRaises(PoError):
            read_po(b'msgid "a"\nmsgstr unquoted\n')
        with self.assertRaises(PoError):
            read_po(b'"orphan continuation"\n')


class StuffedContextTest(unittest.TestCase):
    def test_gnupg_bar_context(self):
        self.assertEqual(strip_stuffed_context("|pinentry-label|_Cancel", "_Abbrechen"),
                         ("_Cancel", "_Abbrechen"))

    def test_gtk_q_context_only_when_german_has_no_bar(self):
        self.assertEqual(strip_stuffed_context("Media | Name", "Name"), ("Name", "Name"))
        self.assertEqual(strip_stuffed_context("yes|no", "ja|nein"), ("yes|no", "ja|nein"))


if __name__ == "__main__":
    unittest.main()
