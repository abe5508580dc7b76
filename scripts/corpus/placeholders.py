"""Placeholders of every format become %d (a number) or %s (anything else).

Catalogs use printf ("%1$s", "%-10s", "%lu", "%<PRIuMAX>"), Python ("%(name)s", "{0}",
"{name}"), Qt ("%1", "%L1"), LibreOffice ("$(ARG1)"), Scheme's format (GnuCash's "~a")
and others. A model only needs to know
that a value goes here and whether it is a number; one spelling per kind also makes the
same message from two programs one segment. Counting them on each side catches
translations that lost or invented a value (often "%d files" translated as "eine Datei"),
which the pipeline drops.
"""

import re

NUMERIC_CONVERSIONS = frozenset("diouxXeEfFgGaAn")

_PLACEHOLDER = re.compile(r"""
    (?P<percent> %% )
  | % (?:\d+\$)? [-+\#0']* (?:\d+)? (?:\.\d+)? <(?P<sysdep> (?:PRI|SCN)[A-Za-z0-9]+ )>
  | %\( [A-Za-z0-9_.-]+ \) [-+\#0]* (?:\d+)? (?:\.\d+)? (?P<python> [diouxXeEfFgGcrsa] )
  | % (?:\d+\$)? [-+\#0']* (?:\d+|\*(?:\d+\$)?)? (?:\.(?:\d+|\*(?:\d+\$)?))?
      (?: (?P<gcc> q ) (?P<quoted> [A-Za-z] )
        | (?:hh|ll|h|l|L|q|j|z|Z|t|I64|I32)? (?P<printf> [diouxXeEfFgGaAcCsSpn] ) )
  | % (?P<qt_locale> L )? (?P<qt> [1-9][0-9]? ) (?![0-9])
  | \{ (?: \d+ | [A-Za-z_][A-Za-z0-9_]* )? (?: ![rsa] )? (?: :[^{}\s]* )? \}
  | \$ (?: \( [A-Za-z_][A-Za-z0-9_]* \) | \{ [A-Za-z_][A-Za-z0-9_]* \} )
  | (?<![~\w]) ~ [aAsS] (?![A-Za-z])
""", re.X)


def _kind(match):
    """'%d', '%s', or '%' for an escaped percent sign."""
    if match.group("percent"):
        return "%"
    if match.group("sysdep"):
        return "%d"  # PRIdMAX, PRIuMAX, PRIx64...: all integers
    letter = (match.group("python") or match.group("printf") or match.group("quoted"))
    if letter:
        return "%d" if letter in NUMERIC_CONVERSIONS else "%s"
    if match.group("qt_locale"):
        return "%d"  # %L1: a number in the locale's format
    return "%s"


def normalize(text):
    """(text with placeholders as %d/%s, number of %d, number of %s). An escaped "%%" becomes
    a plain '%' and counts as nothing."""
    counts = {"%d": 0, "%s": 0}

    def replace(match):
        kind = _kind(match)
        if kind in counts:
            counts[kind] += 1
        return kind

    result = _PLACEHOLDER.sub(replace, text)
    return result, counts["%d"], counts["%s"]
