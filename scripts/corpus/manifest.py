"""Output files written atomically, and the manifest that identifies a corpus.

The manifest holds what determines the text (package versions and .deb checksums, the
options) and what describes it (counts, figures, checksums of each file), and nothing that
changes between runs (no dates, no times, no paths), so that two builds from the same
packages are byte-identical, manifest included, and a score can name its corpus by them.
"""

import hashlib
import json
import os
import tempfile

SPLITS = ("train", "dev", "test")
LANGUAGES = ("en", "de")


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomically(path, data):
    """Write bytes to path through a temporary file in the same folder and a rename, so
    that a reader never sees half a file and an interrupted run leaves the old one."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    try:
        with os.fdopen(handle, "wb") as f:
            f.write(data)
        os.chmod(temporary, 0o666 & ~_umask())  # mkstemp's 0600 would hide the corpus
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def write_corpus(out_dir, splits, manifest):
    """Write train/dev/test .en/.de (one segment per line) and MANIFEST.json; return the
    manifest with each file's SHA-256 and line count added."""
    files = {}
    for split in SPLITS:
        for side, language in enumerate(LANGUAGES):
            name = f"{split}.{language}"
            data = "".join(pair[side] + "\n" for pair in splits[split]).encode("utf-8")
            write_atomically(os.path.join(out_dir, name), data)
            files[name] = {"sha256": hashlib.sha256(data).hexdigest(),
                           "lines": len(splits[split])}
    manifest = dict(manifest, files=files)
    text = json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    write_atomically(os.path.join(out_dir, "MANIFEST.json"), text.encode("utf-8"))
    return manifest
