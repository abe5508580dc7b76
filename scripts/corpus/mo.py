"""Reader for binary gettext catalogs (.mo), including system-dependent strings.

Reading the binary format directly avoids PO escape handling and needs no gettext tools.
Python's own gettext module is not used because it drops the system-dependent strings
(revision 1 catalogs): messages such as "%<PRIuMAX> bytes" live in a separate table that
the C library expands at run time, and coreutils, git, util-linux and others keep some
of their messages only there.
"""

import struct

MAGIC_LE = 0x950412DE
END_OF_SEGMENTS = 0xFFFFFFFF


class MoError(ValueError):
    """The file is not a gettext catalog or is truncated."""


def _reader(data, path):
    if len(data) < 28:
        raise MoError(f"{path}: too short for a .mo file")
    magic = struct.unpack_from("<I", data, 0)[0]
    if magic == MAGIC_LE:
        order = "<"
    elif struct.unpack_from(">I", data, 0)[0] == MAGIC_LE:
        order = ">"
    else:
        raise MoError(f"{path}: not a .mo file (bad magic number)")

    def u32(offset, count=1):
        if offset < 0 or offset + 4 * count > len(data):
            raise MoError(f"{path}: offset {offset} outside the file")
        return struct.unpack_from(f"{order}{count}I", data, offset)

    return u32


def _slice(data, offset, length, path):
    if offset + length > len(data):
        raise MoError(f"{path}: string at {offset} runs past the end of the file")
    return data[offset:offset + length]


def read_mo(data, path="<mo>"):
    """Return the catalog's (original, translation) byte-string pairs, in file order.

    An original is b"context\\x04msgid\\x00msgid_plural" with the optional parts absent;
    a translation holds the plural forms separated by NUL bytes. Decoding is left to the
    caller, which knows the charset from the header (the entry with an empty original).
    """
    u32 = _reader(data, path)
    revision, count, originals, translations = u32(4, 4)
    if revision >> 16 > 1:
        raise MoError(f"{path}: unsupported .mo major revision {revision >> 16}")
    pairs = []
    for i in range(count):
        olen, ooff = u32(originals + 8 * i, 2)
        tlen, toff = u32(translations + 8 * i, 2)
        pairs.append((_slice(data, ooff, olen, path), _slice(data, toff, tlen, path)))
    if revision & 0xFFFF and len(data) >= 48:
        pairs.extend(_sysdep_pairs(data, u32, path))
    return pairs


def _sysdep_pairs(data, u32, path):
    """System-dependent strings, with each segment written back as '<NAME>' (as in the PO
    source: "%<PRIuMAX>"), which is what a translator saw."""
    nsegments, segments, nstrings, originals, translations = u32(28, 5)
    names = []
    for i in range(nsegments):
        length, offset = u32(segments + 8 * i, 2)
        names.append(_slice(data, offset, length, path).rstrip(b"\0"))

    def assemble(descriptor):
        (offset,) = u32(descriptor)
        parts, position, cursor = [], offset, descriptor + 4
        while True:
            size, ref = u32(cursor, 2)
            cursor += 8
            parts.append(_slice(data, position, size, path))
            position += size
            if ref == END_OF_SEGMENTS:
                # The last static segment includes the string's terminating NUL.
                joined = b"".join(parts)
                return joined[:-1] if joined.endswith(b"\0") else joined
            if ref >= len(names):
                raise MoError(f"{path}: system-dependent segment {ref} does not exist")
            parts.append(b"<" + names[ref] + b">")

    return [(assemble(u32(originals + 4 * i)[0]), assemble(u32(translations + 4 * i)[0]))
            for i in range(nstrings)]
