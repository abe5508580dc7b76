"""Keyboard accelerator markers: "_Save", "&Open", "~Print" become "Save", "Open", "Print".

Each toolkit marks the accelerator key differently: GTK with '_', Qt/KDE and wxWidgets with
'&', LibreOffice with '~' (which its catalogs declare in the X-Accelerator-Marker header).
The marker is chosen per package: declared in a header, or '_'/'&' when at least 0.3% of the
package's pairs have exactly one candidate on each side, which real accelerators do and
stray underscores in identifiers do not. Left in, "_Save" and "Save" would be two segments
and the model would learn to sprinkle markers.
"""

import re

MARKERS = ("_", "&")
MIN_SHARE = 0.003
_ENTITY = re.compile(r"&(#\d+|#x[0-9A-Fa-f]+|[A-Za-z]+);")
_CODE_CHARS = re.compile(r"[.:=\\()\[\]{}$%<>@#+]")
# Sentence punctuation around a word ("~Save...", "(&Open)") is not code.
_PUNCTUATION = ".,;:!?\u2026\"'\u201c\u201d\u201e()[]"


def _token_at(text, index):
    start = index
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    end = index
    while end < len(text) and not text[end].isspace():
        end += 1
    return text[start:end]


def _is_identifier(token, marker, before, after, other_side):
    """FOO_BAR, AT&T, file_name.txt, a URL's "&b=2", and io_channel when the other side
    has it too: code, not a marker. A marker that starts a word ("_Find/Replace",
    "Add _X.509") is taken as one unless the word has several markers ("_N/_P")."""
    core = token.strip(_PUNCTUATION)
    if core.count(marker) > 1:
        return True
    if not before.isalnum():
        return False
    if _CODE_CHARS.search(core):
        return True
    if core in {word.strip(_PUNCTUATION) for word in other_side.split()}:
        return True  # copied unchanged into the other language: a name, not a label
    if before.isupper() and after.isupper():
        return True  # FOO_BAR, AT&T
    return False


def candidates(text, marker, other_side=""):
    """Positions of '<marker><letter or digit>' that can be accelerator markers."""
    found = []
    for index in range(len(text) - 1):
        if text[index] != marker or not text[index + 1].isalnum():
            continue
        before = text[index - 1] if index else " "
        if before == marker:
            continue  # "__" or "&&": an escaped literal marker
        if marker == "&" and _ENTITY.match(text, index):
            continue
        token = _token_at(text, index)
        if _is_identifier(token, marker, before, text[index + 1], other_side):
            continue
        found.append(index)
    return found


def choose_markers(pairs, declared=()):
    """The package's markers: those declared in a catalog header, plus '_' and '&' where at
    least MIN_SHARE of the pairs have exactly one candidate on both sides."""
    chosen = [m for m in declared if m]
    for marker in MARKERS:
        if marker in chosen or not pairs:
            continue
        both = sum(1 for en, de in pairs
                   if marker in en and marker in de
                   and len(candidates(en, marker, de)) == 1
                   and len(candidates(de, marker, en)) == 1)
        if both >= MIN_SHARE * len(pairs):
            chosen.append(marker)
    return tuple(chosen)


def _strip_line(line, marker, other_side):
    found = candidates(line, marker, other_side)
    if len(found) != 1:
        return line  # none, or several: rather an identifier than a label
    return line[:found[0]] + line[found[0] + 1:]


def _strip_side(text, marker, other_side):
    """One marker per line: a multi-line message can be a list of button labels (vim's
    "&Open Read-Only\n&Edit anyway\n&Quit")."""
    return "\n".join(_strip_line(line, marker, other_side) for line in text.split("\n"))


def strip_accelerators(english, german, markers):
    """The pair with one accelerator marker per side removed, for each chosen marker."""
    for marker in markers:
        if marker in english or marker in german:
            english, german = (_strip_side(english, marker, german),
                               _strip_side(german, marker, english))
    return english, german
