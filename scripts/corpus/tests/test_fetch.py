"""Fetching through apt-get, with a stand-in apt-get on PATH: nothing is downloaded."""

import hashlib
import io
import json
import os
import shutil
import stat
import subprocess
import tempfile
import unittest
from unittest import mock

from corpus import fetch
from corpus.tests.fixtures import message, mo_bytes

# Answers "download --print-uris PKG..." from the .deb files in $FAKE_POOL, and
# "download PKG" by copying one into the current folder, counting downloads in a log.
FAKE_APT_GET = r"""#!/bin/sh
[ "$1" = download ] || exit 64
shift
if [ "$1" = --print-uris ]; then
  shift
  for package in "$@"; do
    deb=$(ls "$FAKE_POOL"/"$package"_*.deb 2>/dev/null) || {
      echo "E: Unable to locate package $package" >&2; exit 100; }
    name=$(basename "$deb")
    size=$(stat -c %s "$deb"); sum=$(sha256sum "$deb" | cut -d' ' -f1)
    echo "'http://example.invalid/$name' $name $size SHA256:$sum"
  done
  exit 0
fi
echo "$1" >> "$FAKE_POOL/downloads.log"
cp "$FAKE_POOL"/"$1"_*.deb .
"""


def build_deb(pool, package, version, msgstr):
    root = tempfile.mkdtemp(dir=pool)
    os.makedirs(os.path.join(root, "DEBIAN"))
    with open(os.path.join(root, "DEBIAN", "control"), "w") as f:
        f.write(f"Package: {package}\nVersion: {version}\nArchitecture: all\n"
                "Maintainer: Test <test@example.org>\nDescription: test\n")
    folder = os.path.join(root, "usr", "share", "locale", "de", "LC_MESSAGES")
    os.makedirs(folder)
    with open(os.path.join(folder, f"{package}.mo"), "wb") as f:
        f.write(mo_bytes([message("Open the file", msgstr)]))
    for old in os.listdir(pool):
        if old.startswith(package + "_"):
            os.unlink(os.path.join(pool, old))
    deb = os.path.join(pool, f"{package}_{version}_all.deb")
    subprocess.run(["dpkg-deb", "--root-owner-group", "--build", root, deb], check=True,
                   capture_output=True)
    shutil.rmtree(root)
    return deb


@unittest.skipUnless(shutil.which("dpkg-deb") and shutil.which("sha256sum"),
                     "dpkg-deb is not installed")
class FetchTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="corpus-fetch-")
        self.pool = os.path.join(self.tmp, "pool")
        bin_dir = os.path.join(self.tmp, "bin")
        os.makedirs(self.pool)
        os.makedirs(bin_dir)
        apt = os.path.join(bin_dir, "apt-get")
        with open(apt, "w") as f:
            f.write(FAKE_APT_GET)
        os.chmod(apt, os.stat(apt).st_mode | stat.S_IXUSR)
        environment = {"PATH": bin_dir + os.pathsep + os.environ["PATH"],
                       "FAKE_POOL": self.pool}
        patcher = mock.patch.dict(os.environ, environment)
        patcher.start()
        self.addCleanup(patcher.stop)
        self.addCleanup(shutil.rmtree, self.tmp)
        self.cache = os.path.join(self.tmp, "cache")

    def downloads(self):
        try:
            with open(os.path.join(self.pool, "downloads.log")) as f:
                return f.read().split()
        except FileNotFoundError:
            return []

    def test_download_once_then_reuse_then_update(self):
        deb = build_deb(self.pool, "fake-l10n", "1.0-1", "Datei öffnen")
        log = io.StringIO()
        result = fetch.fetch(["fake-l10n"], self.cache, log=log)
        folder, source = result["fake-l10n"]
        self.assertEqual(source["version"], "1.0-1")
        with open(deb, "rb") as f:
            self.assertEqual(source["sha256"], hashlib.sha256(f.read()).hexdigest())
        self.assertTrue(os.path.isfile(os.path.join(
            folder, "usr/share/locale/de/LC_MESSAGES/fake-l10n.mo")))
        self.assertTrue(os.path.isfile(os.path.join(self.cache, "debs", os.path.basename(deb))))
        fetch.fetch(["fake-l10n"], self.cache, log=log)
        self.assertEqual(self.downloads(), ["fake-l10n"])  # the second run reused the cache
        build_deb(self.pool, "fake-l10n", "1.0-2", "Die Datei öffnen")
        _, source = fetch.fetch(["fake-l10n"], self.cache, log=log)["fake-l10n"]
        self.assertEqual(source["version"], "1.0-2")
        self.assertEqual(self.downloads(), ["fake-l10n", "fake-l10n"])

    def test_unknown_package(self):
        build_deb(self.pool, "fake-l10n", "1.0-1", "Datei öffnen")
        with self.assertRaises(fetch.FetchError) as raised:
            fetch.fetch(["fake-l10n", "absent"], self.cache, log=io.StringIO())
        self.assertIn("Unable to locate package absent", str(raised.exception))
        self.assertIn("apt-get update", str(raised.exception))

    def test_missing_package_lists_named(self):
        empty_lists = os.path.join(self.tmp, "lists")
        os.makedirs(empty_lists)
        with mock.patch.object(fetch, "APT_LISTS", empty_lists):
            with self.assertRaises(fetch.FetchError) as raised:
                fetch.fetch(["absent"], self.cache, log=io.StringIO())
        self.assertIn("package lists are missing", str(raised.exception))

    def test_offline_extracts_a_cached_deb(self):
        deb = build_deb(self.pool, "fake-l10n", "3.1-1", "Datei öffnen")
        os.makedirs(os.path.join(self.cache, "debs"))
        shutil.copy(deb, os.path.join(self.cache, "debs"))
        _, source = fetch.fetch(["fake-l10n"], self.cache, offline=True)["fake-l10n"]
        self.assertEqual(source["version"], "3.1-1")
        self.assertEqual(self.downloads(), [])

    def test_version_from_file_name(self):
        self.assertEqual(fetch.version_of("libreoffice-l10n-de_4%3a7.4.7-1%2bdeb12u1_all.deb"),
                         "4:7.4.7-1+deb12u1")


@unittest.skipUnless(shutil.which("dpkg-deb"), "dpkg-deb is not installed")
class ExtractTest(unittest.TestCase):
    """A .deb built here: German catalogs extracted, symlinks and other files not."""

    def test_extract_german_catalogs_only(self):
        with tempfile.TemporaryDirectory(prefix="corpus-deb-") as tmp:
            root = os.path.join(tmp, "pkg")
            os.makedirs(os.path.join(root, "DEBIAN"))
            with open(os.path.join(root, "DEBIAN", "control"), "w") as f:
                f.write("Package: fake-l10n\nVersion: 2.0-1\nArchitecture: all\n"
                        "Maintainer: Test <test@example.org>\nDescription: test\n")
            locale = os.path.join(root, "usr", "share", "locale")
            for language in ("de", "de_DE", "fr"):
                os.makedirs(os.path.join(locale, language, "LC_MESSAGES"))
                with open(os.path.join(locale, language, "LC_MESSAGES", "fake.mo"), "wb") as f:
                    f.write(mo_bytes([message("Open", "Öffnen")]))
            os.symlink("fake.mo", os.path.join(locale, "de", "LC_MESSAGES", "alias.mo"))
            with open(os.path.join(locale, "de", "LC_MESSAGES", "iso_639-3.mo"), "wb") as f:
                f.write(mo_bytes([message("English", "Englisch")]))
            os.makedirs(os.path.join(root, "usr", "share", "doc"))
            with open(os.path.join(root, "usr", "share", "doc", "README"), "w") as f:
                f.write("not a catalog\n")
            cache = os.path.join(tmp, "cache")
            os.makedirs(os.path.join(cache, "debs"))
            deb = os.path.join(cache, "debs", "fake-l10n_2.0-1_all.deb")
            subprocess.run(["dpkg-deb", "--root-owner-group", "--build", root, deb],
                           check=True, capture_output=True)
            folder = fetch.extract("fake-l10n", deb, "ab" * 32, os.path.join(cache, "catalogs"))
            found = sorted(os.path.relpath(os.path.join(d, n), folder)
                           for d, _, names in os.walk(folder) for n in names)
            self.assertEqual(found, [".source.json",
                                     "usr/share/locale/de/LC_MESSAGES/fake.mo"])
            with open(os.path.join(folder, ".source.json")) as f:
                self.assertEqual(json.load(f)["version"], "2.0-1")


if __name__ == "__main__":
    unittest.main()
