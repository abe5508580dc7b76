"""Keyboard accelerator markers: "_Save", "&Open", "~Print" become "Save", "Open", "Print".

Each toolkit marks the accelerator key differently: GTK with '_', Qt/KDE and wxWidgets with
'&', LibreOffice with '~' (which its catalogs declare in the X-Accelerator-Marker header).
The marker is chosen per package: declared in a header, or '_'/'&' when at least 0.3% of the
package's pairs have exactly one candidate on each side, which real accelerators do and
identifiers do not. Left in, "_Save" and "Save" would be two segments and the model would
learn to sprinkle markers.

Identifiers must survive: FOO_BAR, AT&T, file_name.txt, a URL's "?a=1&b=2", and the
snake_case names of command-line tools' messages ("default_missing", "check_policy"),
which translators copy, quote or recapitalise ("i_blocks" -> "i_Blocks"). An underscore
between two lower-case letters is taken as a marker only where the word without it occurs
elsewhere in the package ("Re_load" -> "reload"), which "defaultmissing" does not.
"""

import re

MARKERS = ("_", "&")
MIN_SHARE = 0.003
_ENTITY = re.compile(r"&(#\d+|#x[0-9A-Fa-f]+|[A-Za-z]+);")
_CODE_CHARS = re.compile(r"[.:=\\()\[\]{}$%<>@#+]")
# Sentence punctuation around a word ("~Save...", "(&Open)") is not code.
_PUNCTUATION = ".,;:!?\u2026\"'\u201c\u201d\u201e()[]"
_QUOTES = "'`\"\u00bb\u00ab\u201e\u201c\u201d\u2018\u2019\u203a\u2039"
_LETTERS = re.compile(r"[^\W\d_]+")


def vocabulary(pairs):
    """The package's words (lowercased runs of letters, both languages), against which a
    word with an underscore inside is checked."""
    words = set()
    for english, german in pairs:
        words.update(_LETTERS.findall(english.lower()))
        words.update(_LETTERS.findall(german.lower()))
    return words


def _span(text, index, inside):
    start = index
    while start > 0 and inside(text[start - 1]):
        start -= 1
    end = index + 1
    while end < len(text) and inside(text[end]):
        end += 1
    return text[start:end]


def _other_words(other_side, marker):
    """The other side's words with markers, as written and lowercased:
    "»default_missing«-Definition" gives "default_missing" and "Definition", "definition"."""
    words = set(re.findall(r"(?:\w|" + re.escape(marker) + r")+", other_side))
    return words | {word.lower() for word in words}


def _is_identifier(text, index, marker, other_words, words):
    before, after = (text[index - 1] if index else " "), text[index + 1]
    token = _span(text, index, lambda ch: not ch.isspace()).strip(_PUNCTUATION)
    if token.count(marker) > 1:
        return True  # "_N/_P", "a_b_c"
    word = _span(text, index, lambda ch: ch.isalnum() or ch == marker)
    if not before.isalnum():
        # A marker that starts a word ("_Find/Replace", "Add _X.509"), unless the word is
        # quoted as a name (C's '_Atomic' in gcc's messages).
        return before in _QUOTES
    if _CODE_CHARS.search(token):
        return True
    if word.lower() in other_words:
        return True  # copied into the other language: a name, not a label
    if before.isupper() and after.isupper():
        return True  # FOO_BAR, AT&T
    if (marker == "_" and words is not None and before.islower() and after.islower()
            and word.replace(marker, "").lower() not in words):
        return True  # default_missing: no "defaultmissing" anywhere
    return False


def candidates(text, marker, other_side="", words=None):
    """Positions of '<marker><letter or digit>' that can be accelerator markers. words is
    the package's vocabulary (None: no vocabulary check)."""
    found, other_words = [], None
    for index in range(len(text) - 1):
        if text[index] != marker or not text[index + 1].isalnum():
            continue
        if index and text[index - 1] == marker:
            continue  # "__" or "&&": an escaped literal marker
        if marker == "&" and _ENTITY.match(text, index):
            continue
        if other_words is None:
            other_words = _other_words(other_side, marker)
        if not _is_identifier(text, index, marker, other_words, words):
            found.append(index)
    return found


def choose_markers(pairs, declared=(), words=None):
    """The package's markers: those declared in a catalog header, plus '_' and '&' where at
    least MIN_SHARE of the pairs have exactly one candidate on both sides."""
    chosen = [m for m in declared if m]
    for marker in MARKERS:
        if marker in chosen or not pairs:
            continue
        both = sum(1 for en, de in pairs
                   if marker in en and marker in de
                   and len(candidates(en, marker, de, words)) == 1
                   and len(candidates(de, marker, en, words)) == 1)
        if both >= MIN_SHARE * len(pairs):
            chosen.append(marker)
    return tuple(chosen)


def _strip_line(line, marker, other_side, words):
    found = candidates(line, marker, other_side, words)
    if len(found) != 1:
        return line  # none, or several: rather an identifier than a label
    return line[:found[0]] + line[found[0] + 1:]


def _strip_side(text, marker, other_side, words):
    """One marker per line: a multi-line message can be a list of button labels (vim's
    "&Open Read-Only\\n&Edit anyway\\n&Quit")."""
    return "\n".join(_strip_line(line, marker, other_side, words)
                     for line in text.split("\n"))


def strip_accelerators(english, german, markers, words=None):
    """The pair with one accelerator marker per side removed, for each chosen marker."""
    for marker in markers:
        if marker in english or marker in german:
            english, german = (_strip_side(english, marker, german, words),
                               _strip_side(german, marker, english, words))
    return english, german
