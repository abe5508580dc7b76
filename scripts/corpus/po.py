"""Reader for gettext catalogs in text form (.po).

Debian ships compiled catalogs, but a user's own catalogs or msgunfmt output are PO text.
The reader turns a PO file into the same (original, translation) byte pairs as the .mo
reader, dropping what msgfmt drops: fuzzy entries (unreviewed translations) and obsolete
"#~" entries. Strings stay bytes until the header's charset is known.
"""

import re

_ESCAPES = {"n": b"\n", "t": b"\t", "r": b"\r", '"': b'"', "\\": b"\\", "a": b"\a",
            "b": b"\b", "f": b"\f", "v": b"\v", "'": b"'", "?": b"?"}
_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{1,2}|[0-7]{1,3}|.)", re.S)
_KEYWORD = re.compile(r"^(msgctxt|msgid_plural|msgid|msgstr(?:\[(\d+)\])?)\s+(\".*)$")


class PoError(ValueError):
    """The text is not a well-formed PO file."""


def unquote(literal, where):
    """The bytes of one C string literal "..." (the text is read as Latin-1, so each
    character stands for one byte of the file)."""
    literal = literal.strip()
    if len(literal) < 2 or literal[0] != '"' or literal[-1] != '"':
        raise PoError(f"{where}: expected a quoted string, got {literal!r}")

    def replace(match):
        code = match.group(1)
        if code[0] == "x":
            return chr(int(code[1:], 16))
        if code[0] in "01234567":
            return chr(int(code, 8) & 0xFF)
        if code in _ESCAPES:
            return _ESCAPES[code].decode("latin-1")
        raise PoError(f"{where}: unknown escape \\{code}")

    return _ESCAPE.sub(replace, literal[1:-1]).encode("latin-1")


def read_po(data, path="<po>"):
    """Return the catalog's (original, translation) byte-string pairs in file order."""
    pairs = []
    entry, field, flags = {}, None, set()

    def finish():
        if "msgid" in entry and "fuzzy" not in flags:
            original = entry["msgid"]
            if "msgctxt" in entry:
                original = entry["msgctxt"] + b"\x04" + original
            if "msgid_plural" in entry:
                original += b"\x00" + entry["msgid_plural"]
                forms = sorted(k for k in entry if isinstance(k, int))
                translation = b"\x00".join(entry[k] for k in forms)
            else:
                translation = entry.get("msgstr", b"")
            pairs.append((original, translation))
        entry.clear()
        flags.clear()

    for number, line in enumerate(data.decode("latin-1").splitlines(), 1):
        where = f"{path}:{number}"
        line = line.strip()
        if not line or line.startswith("#~"):
            continue  # blank, or an obsolete entry kept only for translation memory
        if line.startswith("#"):
            if "msgid" in entry:
                finish()
            if line.startswith("#,"):
                flags.update(flag.strip() for flag in line[2:].split(","))
            continue
        if line.startswith('"'):
            if field is None:
                raise PoError(f"{where}: string continuation outside an entry")
            entry[field] += unquote(line, where)
            continue
        match = _KEYWORD.match(line)
        if not match:
            raise PoError(f"{where}: cannot parse {line[:40]!r}")
        keyword, index, literal = match.groups()
        if keyword in ("msgctxt", "msgid") and "msgid" in entry:
            finish()
        field = int(index) if index is not None else keyword
        entry[field] = unquote(literal, where)
    finish()
    return pairs
