"""From extracted catalogs to clean, filtered pairs: the corpus before the split."""

import os
import sys

from .accel import choose_markers, vocabulary
from .catalog import load_catalog, raw_pairs
from .clean import after_markup, before_accelerators
from .e2fsck import expand_pairs
from .filters import REASONS, PairFilter
from .packages import is_catalog

# Drops outside the filters, counted with them in the manifest.
PARSE_DROPS = ("e2fsck_table", "placeholder_mismatch")
DROP_REASONS = PARSE_DROPS + REASONS


def catalog_files(folder):
    """Relative paths of the German catalogs under folder, sorted, regular files only."""
    found = []
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in files:
            path = os.path.join(root, name)
            relative = os.path.relpath(path, folder).replace(os.sep, "/")
            if not os.path.islink(path) and is_catalog(relative):
                found.append(relative)
    return sorted(found)


def package_pairs(folder):
    """(raw pair count, pairs after e2fsck expansion, declared accelerator markers,
    table entries dropped, catalog names) for one package's catalog folder."""
    raw, pairs, declared, dropped = 0, [], [], 0
    names = catalog_files(folder)
    for relative in names:
        with open(os.path.join(folder, relative), "rb") as f:
            catalog = load_catalog(f.read(), relative)
        found = raw_pairs(catalog)
        raw += len(found)
        found, table = expand_pairs(found)
        dropped += table
        pairs.extend(found)
        marker = catalog.headers.get("X-Accelerator-Marker", "")
        if len(marker) == 1 and marker not in declared:
            declared.append(marker)
    return raw, pairs, tuple(declared), dropped, names


def build_pairs(packages, fetched, log=None):
    """(clean pairs in package order, counts, per-package records for the manifest).

    fetched maps each package to (catalog folder, source record) as fetch.fetch returns."""
    log = log or sys.stderr
    pair_filter = PairFilter()
    counts = {"raw": 0, **{name: 0 for name in PARSE_DROPS}}
    corpus, records = [], {}
    for package in packages:
        folder, source = fetched[package]
        raw, pairs, declared, table, names = package_pairs(folder)
        counts["raw"] += raw
        counts["e2fsck_table"] += table
        staged = [(before_accelerators(en), before_accelerators(de)) for en, de in pairs]
        words = vocabulary(staged)
        markers = choose_markers(staged, declared, words)
        pair_filter.start_package()
        kept = 0
        for english, german in staged:
            cleaned = after_markup(english, german, markers, words)
            if cleaned is None:
                counts["placeholder_mismatch"] += 1
            elif pair_filter.keep(*cleaned):
                corpus.append(cleaned)
                kept += 1
        records[package] = {"version": source.get("version", ""),
                            "deb": source.get("deb", ""),
                            "sha256": source.get("sha256", ""),
                            "catalogs": len(names), "raw_pairs": raw, "kept_pairs": kept,
                            "accelerator_markers": "".join(markers)}
        print(f"  {package}: {len(names)} catalogs, {raw:,} pairs, {kept:,} kept"
              + (f" (accelerators {' '.join(markers)})" if markers else ""), file=log)
    counts.update(pair_filter.counts)
    counts["clean"] = len(corpus)
    return corpus, counts, records

