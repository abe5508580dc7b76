"""Catalog files as decoded entries, and entries as raw English-German pairs."""

import codecs
import re
from dataclasses import dataclass

from .mo import read_mo
from .po import read_po


@dataclass(frozen=True)
class Entry:
    context: str
    msgid: str
    msgid_plural: str  # "" for a message without plural forms
    msgstr: tuple      # the translated forms, msgstr[0] first


@dataclass(frozen=True)
class Catalog:
    name: str          # path inside the package, for messages and the manifest
    headers: dict      # header fields, e.g. {"X-Accelerator-Marker": "~"}
    entries: tuple     # Entry, header excluded


def parse_headers(text):
    headers = {}
    for line in text.split("\n"):
        key, sep, value = line.partition(":")
        if sep and key.strip():
            headers[key.strip()] = value.strip()
    return headers


def charset_of(headers):
    """The header's charset; UTF-8 when absent or the template placeholder "CHARSET"."""
    match = re.search(r"charset=([^\s;]+)", headers.get("Content-Type", ""))
    if not match:
        return "utf-8"
    try:
        return codecs.lookup(match.group(1)).name
    except LookupError:
        return "utf-8"


def load_catalog(data, name):
    """Decode a .mo or .po file (chosen by its name) into a Catalog."""
    raw = read_po(data, name) if name.endswith(".po") else read_mo(data, name)
    header = next((t for o, t in raw if o == b""), b"")
    headers = parse_headers(header.decode("utf-8", "replace"))
    charset = charset_of(headers)

    def text(b):
        return b.decode(charset, "replace")

    entries = []
    for original, translation in raw:
        if original == b"":
            continue
        context, sep, rest = original.partition(b"\x04")
        if not sep:
            context, rest = b"", original
        msgid, _, plural = rest.partition(b"\x00")
        entries.append(Entry(text(context), text(msgid), text(plural),
                             tuple(text(form) for form in translation.split(b"\x00"))))
    return Catalog(name, headers, tuple(entries))


# "|pinentry-label|_Cancel": GnuPG's context prefix inside the msgid.
_BAR_CONTEXT = re.compile(r"^\|[^|\n]*\|")


def strip_stuffed_context(english, german):
    """Remove a context written into the msgid itself, which the German side does not
    translate: GnuPG's "|ctx|text" prefix, and GTK's "Context|Text" (Q_()) form when the
    German has no '|' (so "a|b" alternatives translated as "a|b" stay)."""
    if _BAR_CONTEXT.match(english):
        english = _BAR_CONTEXT.sub("", english, count=1)
        german = _BAR_CONTEXT.sub("", german, count=1)
    elif "|" in english and "|" not in german:
        english = english.rsplit("|", 1)[1].strip()
    return english, german


def raw_pairs(catalog):
    """The catalog's (English, German) pairs: one per message, two per plural message
    (msgid with msgstr[0], msgid_plural with msgstr[1]); untranslated forms are skipped."""
    pairs = []
    for entry in catalog.entries:
        sources = [(entry.msgid, entry.msgstr[0])]
        if entry.msgid_plural and len(entry.msgstr) > 1:
            sources.append((entry.msgid_plural, entry.msgstr[1]))
        for english, german in sources:
            if english and german:
                pairs.append(strip_stuffed_context(english, german))
    return pairs
