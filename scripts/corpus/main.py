"""Command line of scripts/build_corpus: fetch, read, clean, filter, split, write."""

import argparse
import os
import sys
import time

from .build import DROP_REASONS, build_pairs
from .fetch import FetchError, fetch
from .manifest import write_corpus
from .packages import DEFAULT_PACKAGES
from .split import split
from .stats import format_summary, summarize

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS_NAME = "debian-en-de"
DEFAULT_SEED = "normgrad-corpus-1"


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="build_corpus",
        description="Build an English-German parallel corpus from the German gettext "
                    "catalogs of Debian packages: train/dev/test .en/.de files (one segment "
                    "per line, lines aligned) and MANIFEST.json. Packages come from apt-get "
                    "download into the cache; a second run reuses them.")
    parser.add_argument("--out", metavar="DIR",
                        default=os.path.join(REPO_ROOT, "out", "corpus", CORPUS_NAME),
                        help=f"output folder (default: out/corpus/{CORPUS_NAME} in the "
                             "repository)")
    parser.add_argument("--cache", metavar="DIR",
                        default=os.path.join(REPO_ROOT, "out", "corpus", "cache"),
                        help="downloaded .deb files and extracted catalogs (default: "
                             "out/corpus/cache in the repository)")
    parser.add_argument("--seed", metavar="S", default=DEFAULT_SEED,
                        help="split seed: another seed picks other dev/test segments "
                             "(default: %(default)s)")
    parser.add_argument("--dev-size", metavar="N", type=int, default=2000,
                        help="dev pairs (default 2000)")
    parser.add_argument("--test-size", metavar="N", type=int, default=2000,
                        help="test pairs (default 2000)")
    parser.add_argument("--packages", nargs="+", metavar="PACKAGE",
                        help="Debian packages to read, in priority order (default: the 57 "
                             "packages listed in scripts/corpus/packages.py)")
    parser.add_argument("--offline", action="store_true",
                        help="use only the cache: no apt-get; fail if a package is missing")
    args = parser.parse_args(argv)
    if args.dev_size < 0 or args.test_size < 0:
        parser.error("--dev-size and --test-size must not be negative")
    return args


def run(args, log=None):
    log = log or sys.stderr
    started = time.monotonic()
    packages = list(args.packages or DEFAULT_PACKAGES)
    if len(set(packages)) != len(packages):
        raise FetchError("--packages lists a package twice")
    print(f"build_corpus: {len(packages)} packages, cache {args.cache}", file=log)
    fetched = fetch(packages, args.cache, offline=args.offline, log=log)
    fetched_at = time.monotonic()
    corpus, counts, records = build_pairs(packages, fetched, log=log)
    train, dev, test, left_out = split(corpus, args.seed, args.dev_size, args.test_size)
    counts.update(train=len(train), dev=len(dev), test=len(test), left_out_of_train=left_out)
    figures = summarize(corpus)
    manifest = {
        "corpus": CORPUS_NAME,
        "description": "English-German pairs from the German gettext catalogs of Debian "
                       "packages; software messages, not news text",
        "options": {"seed": args.seed, "dev_size": args.dev_size,
                    "test_size": args.test_size, "packages": packages},
        "packages": records,
        "counts": counts,
        "summary": figures,
    }
    write_corpus(args.out, {"train": train, "dev": dev, "test": test}, manifest)
    drops = ", ".join(f"{name} {counts[name]:,}" for name in DROP_REASONS)
    print(f"build_corpus: {counts['raw']:,} raw pairs -> {counts['clean']:,} clean -> train "
          f"{len(train):,} / dev {len(dev):,} / test {len(test):,} ({left_out:,} left out "
          f"as dev/test keys)\n  dropped: {drops}\n{format_summary(figures)}", file=log)
    print(f"build_corpus: wrote {args.out} in {time.monotonic() - started:.1f} s "
          f"(fetching {fetched_at - started:.1f} s)", file=log)


def main(argv=None):
    args = parse_args(argv)
    try:
        run(args)
    except (FetchError, ValueError, OSError) as error:
        print(f"build_corpus: error: {error}", file=sys.stderr)
        return 1
    return 0
