"""e2fsck's @-abbreviations expanded from the catalog's own translated table."""

import unittest

from corpus.e2fsck import ABBREVIATIONS, expand_pairs

GERMAN = {"i": "Inode", "b": "Block", "d": "Verzeichnis", "S": "Super@b", "e": "Eintrag",
          "E": "@e „%Dn“ in %p (%i)", "r": "Root-@i"}


def table_pairs():
    return [(letter + text, letter + GERMAN.get(letter, text.upper()))
            for letter, text in ABBREVIATIONS]


class E2fsckTest(unittest.TestCase):
    def test_expanded_from_the_table_and_table_dropped(self):
        pairs = table_pairs() + [("@S has an invalid @b", "@S hat einen ungültigen @b"),
                                 ("@r is not a @d", "@r ist kein @d"),
                                 ("@E has @@ in it", "@E enthält @@")]
        expanded, dropped = expand_pairs(pairs)
        self.assertEqual(dropped, len(ABBREVIATIONS))
        self.assertEqual(expanded, [
            ("Superblock has an invalid block", "SuperBlock hat einen ungültigen Block"),
            ("Root inode is not a directory", "Root-Inode ist kein Verzeichnis"),
            ("Entry '%Dn' in %p (%i) has @ in it", "Eintrag „%Dn“ in %p (%i) enthält @"),
        ])

    def test_catalog_without_the_table_unchanged(self):
        pairs = [("mail me@example.org", "schreib an me@example.org")]
        self.assertEqual(expand_pairs(pairs), (pairs, 0))


if __name__ == "__main__":
    unittest.main()
