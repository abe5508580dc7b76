"""The cleaning rules, applied to each side of a pair in this order:

1. gcc's quoting directives become plain text,
2. markup tags are removed where they are markup (markup.py),
3. keyboard accelerator markers are removed (accel.py),
4. whitespace is normalised,
5. placeholders become %d or %s (placeholders.py); a pair whose sides have different
   placeholder counts is dropped.

The order matters: gcc's "%<" must go before tags are looked for, markers are found before
whitespace is joined, and placeholders are counted on the final text.
"""

import re
import sys
import unicodedata

from .accel import strip_accelerators
from .markup import strip_markup
from .placeholders import normalize

# gcc's diagnostics: "%<name%>" quotes (printed as '...'), "%{...%}" delimits a URL's link
# text, and "isn%'t" is an apostrophe. "%<PRIuMAX>" is a printf placeholder, not a quote.
_SYSDEP = re.compile(r"%((?:\d+\$)?[-+#0']*\d*(?:\.\d+)?)<((?:PRI|SCN)[A-Za-z0-9]+)>")
_SYSDEP_GUARD = "\uE000"  # a private-use character no catalog contains
_GCC_QUOTE = re.compile(r"%<(.*?)%>", re.S)
_GCC_URL = re.compile(r"%\{(.*?)%\}", re.S)
_GCC_APOSTROPHE = re.compile(r"(?<=\w)%'(?=\w)")


def gcc_quoting(text):
    if "%" not in text:
        return text
    guarded = _SYSDEP.sub(lambda m: f"%{m.group(1)}{_SYSDEP_GUARD}{m.group(2)}>", text)
    guarded = _GCC_QUOTE.sub(r"'\1'", guarded)
    guarded = _GCC_URL.sub(r"\1", guarded)
    guarded = _GCC_APOSTROPHE.sub("'", guarded)
    return guarded.replace(_SYSDEP_GUARD, "<")


# Line and paragraph separators, tabs and no-break spaces read as spaces; soft hyphens,
# zero-width characters, direction marks and control characters are invisible.
_SPACE_LIKE = "\n\r\t\v\f\u00a0\u2028\u2029\u0085"


def _character_class(predicate):
    """A regex character class of every code point that satisfies predicate, as ranges
    (one scan of Unicode at import; the per-character loop it replaces dominated a run)."""
    ranges, start, previous = [], None, None
    for code in range(sys.maxunicode + 1):
        if predicate(chr(code)):
            if start is None:
                start = code
            previous = code
        elif start is not None:
            ranges.append((start, previous))
            start = None
    if start is not None:
        ranges.append((start, previous))
    return "[" + "".join(re.escape(chr(first)) + ("-" + re.escape(chr(last))
                                                  if last != first else "")
                         for first, last in ranges) + "]"


_SPACES = re.compile(_character_class(
    lambda ch: ch in _SPACE_LIKE or unicodedata.category(ch) == "Zs"))
_INVISIBLE = re.compile(_character_class(
    lambda ch: ch not in _SPACE_LIKE and unicodedata.category(ch) in ("Cc", "Cf")))


def normalize_whitespace(text):
    """One line per segment: multi-line messages are joined with single spaces."""
    return " ".join(_INVISIBLE.sub("", _SPACES.sub(" ", text)).split())


def before_accelerators(text):
    """Rules 1 and 2 on one side; the package's accelerator markers are chosen from pairs
    in this state, with tags such as "<b>_Save</b>" already gone."""
    return strip_markup(gcc_quoting(text))


def after_markup(english, german, markers, words=None):
    """Rules 3 to 5: (english, german) cleaned, or None when the placeholder counts
    differ. words: the package's vocabulary, for accelerator markers inside words."""
    english, german = strip_accelerators(english, german, markers, words)
    english, en_numbers, en_others = normalize(normalize_whitespace(english))
    german, de_numbers, de_others = normalize(normalize_whitespace(german))
    if (en_numbers, en_others) != (de_numbers, de_others):
        return None
    return english, german
