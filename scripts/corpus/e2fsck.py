"""e2fsck's '@' abbreviations, expanded on both sides of e2fsprogs' messages.

e2fsck's problem table writes "@i" for "inode", "@b" for "block" and so on (e2fsck/
problem.c) and expands them when printing, first letter capitalised at the start of a
message. The table itself is translatable: its entries are messages whose first character
is the abbreviation's letter ("iinode" -> "iInode"), so the catalog gives the German
expansions. Unexpanded, 300-odd messages would teach "@i" instead of "Inode".
"""

import re

# e2fsck's abbreviation table (letter, English expansion), as in its source.
ABBREVIATIONS = (
    ("a", "extended attribute"), ("A", "error allocating"), ("b", "block"),
    ("B", "bitmap"), ("c", "compress"), ("C", "conflicts with some other fs @b"),
    ("d", "directory"), ("D", "deleted"), ("e", "entry"), ("E", "@e '%Dn' in %p (%i)"),
    ("f", "filesystem"), ("F", "for @i %i (%Q) is"), ("g", "group"), ("h", "HTREE @d @i"),
    ("i", "inode"), ("I", "illegal"), ("j", "journal"), ("l", "lost+found"),
    ("L", "is a link"), ("m", "multiply-claimed"), ("n", "invalid"), ("o", "orphaned"),
    ("p", "problem in"), ("q", "quota"), ("r", "root @i"), ("s", "should be"),
    ("S", "super@b"), ("u", "unattached"), ("v", "device"), ("x", "extent"),
    ("z", "zero-length"),
)
TABLE_MSGIDS = frozenset(letter + text for letter, text in ABBREVIATIONS)
_AT = re.compile(r"@([A-Za-z@])")
_MAX_DEPTH = 5  # the table nests two levels ("@E" -> "@e" -> "entry")


def tables(pairs):
    """The English and German tables if these pairs hold the whole translated table,
    else None: only a catalog that translates the table gets expanded."""
    found = {english: german for english, german in pairs if english in TABLE_MSGIDS}
    if len(found) != len(TABLE_MSGIDS):
        return None
    english = {letter: text for letter, text in ABBREVIATIONS}
    german = {}
    for letter, text in ABBREVIATIONS:
        translated = found[letter + text]
        # A translation that lost its leading key letter keeps the English expansion.
        german[letter] = translated[1:] if translated[:1] == letter else text
    return english, german


def expand(message, table, depth=0):
    """Replace each "@x" by its expansion, recursively; "@@" is a literal '@' and an
    unknown letter stays as written. A message that starts with an abbreviation starts
    with a capital, as e2fsck prints it."""
    def replace(match):
        letter = match.group(1)
        if letter == "@":
            return "@"
        if letter not in table or depth >= _MAX_DEPTH:
            return match.group(0)
        return expand(table[letter], table, depth + 1)

    expanded = _AT.sub(replace, message)
    if depth == 0 and message.startswith("@") and expanded[:1].islower():
        expanded = expanded[0].upper() + expanded[1:]
    return expanded


def expand_pairs(pairs):
    """(pairs with both sides expanded, number of table entries dropped). Pairs from a
    catalog without the table are returned unchanged."""
    found = tables(pairs)
    if found is None:
        return pairs, 0
    english_table, german_table = found
    out, dropped = [], 0
    for english, german in pairs:
        if english in TABLE_MSGIDS:
            dropped += 1
            continue
        if _AT.search(english):
            english = expand(english, english_table)
            german = expand(german, german_table)
        out.append((english, german))
    return out, dropped
