"""Small catalogs written by the tests themselves: .mo files built with struct, in the
layout msgfmt produces, and fake package caches that stand in for apt-get downloads."""

import json
import os
import struct

HEADER = ("Project-Id-Version: test 1.0\n"
          "Language: de\n"
          "MIME-Version: 1.0\n"
          "Content-Type: text/plain; charset={charset}\n"
          "Content-Transfer-Encoding: 8bit\n"
          "Plural-Forms: nplurals=2; plural=(n != 1);\n")


def message(msgid, msgstr, context=None, plural=None):
    """One catalog entry; msgstr is a string, or a list of plural forms."""
    forms = [msgstr] if isinstance(msgstr, str) else list(msgstr)
    return {"msgid": msgid, "msgstr": forms, "context": context, "plural": plural}


def mo_bytes(messages, charset="UTF-8", extra_header="", big_endian=False, sysdep=()):
    """A .mo file holding messages (and a header). sysdep: (original, translation) pairs
    of system-dependent strings given as lists of ("text" | ("segment", NAME)) parts,
    which make it a revision 1 file."""
    encoding = "utf-8" if charset.upper() == "CHARSET" else charset
    header = HEADER.format(charset=charset) + extra_header
    table = [(b"", header.encode(encoding))]
    for m in messages:
        original = m["msgid"].encode(encoding)
        if m["context"] is not None:
            original = m["context"].encode(encoding) + b"\x04" + original
        if m["plural"] is not None:
            original += b"\x00" + m["plural"].encode(encoding)
        table.append((original, b"\x00".join(f.encode(encoding) for f in m["msgstr"])))
    table.sort()
    order = ">" if big_endian else "<"
    count = len(table)
    header_size = 48 if sysdep else 28
    originals = header_size
    translations = originals + 8 * count
    data_start = translations + 8 * count
    blob = bytearray()
    o_index, t_index = [], []
    for original, translation in table:
        o_index.append((len(original), data_start + len(blob)))
        blob += original + b"\x00"
    for original, translation in table:
        t_index.append((len(translation), data_start + len(blob)))
        blob += translation + b"\x00"
    sysdep_fields = b""
    if sysdep:
        names = sorted({part[1] for pair in sysdep for side in pair for part in side
                        if isinstance(part, tuple)})
        segments_at = data_start + len(blob)
        name_data = bytearray()
        name_base = segments_at + 8 * len(names)
        segment_table = bytearray()
        for name in names:
            segment_table += struct.pack(order + "2I", len(name) + 1,
                                         name_base + len(name_data))
            name_data += name.encode() + b"\x00"
        blob += segment_table + name_data
        descriptors = {}
        for side_index in (0, 1):
            for pair_index, pair in enumerate(sysdep):
                parts = pair[side_index]
                text = bytearray()
                pieces = []
                pending = b""
                for part in parts:
                    if isinstance(part, tuple):
                        pieces.append((len(pending), names.index(part[1])))
                        text += pending
                        pending = b""
                    else:
                        pending += part.encode()
                pending += b"\x00"  # the last segment includes the terminating NUL
                pieces.append((len(pending), 0xFFFFFFFF))
                text += pending
                string_at = data_start + len(blob)
                blob += bytes(text)
                descriptor = struct.pack(order + "I", string_at) + b"".join(
                    struct.pack(order + "2I", size, ref) for size, ref in pieces)
                descriptors[(side_index, pair_index)] = data_start + len(blob)
                blob += descriptor
        tables = []
        for side_index in (0, 1):
            tables.append(data_start + len(blob))
            for pair_index in range(len(sysdep)):
                blob += struct.pack(order + "I", descriptors[(side_index, pair_index)])
        sysdep_fields = struct.pack(order + "5I", len(names), segments_at, len(sysdep),
                                    tables[0], tables[1])
    revision = 1 if sysdep else 0
    head = struct.pack(order + "7I", 0x950412DE, revision, count, originals, translations,
                       0, 0) + sysdep_fields
    index = b"".join(struct.pack(order + "2I", *entry) for entry in o_index + t_index)
    return head + index + bytes(blob)


def write_package(cache, package, catalogs, version="1.0-1"):
    """A cache entry as fetch.extract leaves it: catalogs maps a path inside the package to
    file bytes, plus the .source.json record."""
    folder = os.path.join(cache, "catalogs", package)
    for path, data in catalogs.items():
        full = os.path.join(folder, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(data)
    source = {"package": package, "deb": f"{package}_{version}_all.deb", "version": version,
              "sha256": "0" * 64}
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, ".source.json"), "w", encoding="utf-8") as f:
        json.dump(source, f)
    return folder
