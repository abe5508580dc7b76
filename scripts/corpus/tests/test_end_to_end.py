"""The whole command on a fake cache: a folder of catalogs stands in for each download."""

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from corpus.main import main
from corpus.split import english_key
from corpus.tests.fixtures import message, mo_bytes, write_package

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "build_corpus")
OUTPUTS = ("train.en", "train.de", "dev.en", "dev.de", "test.en", "test.de", "MANIFEST.json")


def gui_catalog():
    messages = [message(f"_Open file number {i}", f"Datei Nummer {i} ö_ffnen")
                for i in range(40)]
    messages += [message("Open", "Öffnen"),  # "ö_ffnen" is a word of this package
                 message("<b>Bold</b> move", "<b>Fetter</b> Zug"),
                 message("%d file", ["Eine Datei", "%d Dateien"], plural="%d files"),
                 message("Gamma", "Gamma"),
                 message("translator-credits", "Erika Mustermann"),
                 message("Save", "Speichern", context="menu"),
                 message("Save", "Speichern", context="button")]
    return mo_bytes(messages)


def cli_catalog():
    messages = [message(f"cannot read %s: error {i}", f"%s kann nicht gelesen werden: Fehler {i}")
                for i in range(20)]
    messages += [message("Save", "Speichern"), message("%<quoted%> here", "hier %<zitiert%>")]
    return mo_bytes(messages, charset="ISO-8859-1")


def make_cache(cache):
    write_package(cache, "gui-data", {
        "usr/share/locale/de/LC_MESSAGES/gui.mo": gui_catalog(),
        "usr/share/locale/de_DE/LC_MESSAGES/gui.mo": mo_bytes([message("Other", "Anders")]),
        "usr/share/locale/fr/LC_MESSAGES/gui.mo": mo_bytes([message("Yes", "Oui")]),
    })
    write_package(cache, "cli-tools", {"usr/share/locale/de/LC_MESSAGES/cli.mo": cli_catalog()})


def build(cache, out, *extra):
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        code = main(["--offline", "--cache", cache, "--out", out, "--dev-size", "3",
                     "--test-size", "4", "--packages", "gui-data", "cli-tools", *extra])
    return code, stderr.getvalue()


def read(folder, name):
    with open(os.path.join(folder, name), "rb") as f:
        return f.read()


class EndToEndTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="corpus-test-")
        self.cache = os.path.join(self.tmp, "cache")
        make_cache(self.cache)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_outputs_counts_and_manifest(self):
        out = os.path.join(self.tmp, "out")
        code, log = build(self.cache, out)
        self.assertEqual(code, 0, log)
        self.assertIn("gui-data: 1 catalogs", log)
        self.assertIn("(accelerators _)", log)
        lines = {name: read(out, name).decode("utf-8").splitlines() for name in OUTPUTS[:6]}
        for split in ("train", "dev", "test"):
            self.assertEqual(len(lines[f"{split}.en"]), len(lines[f"{split}.de"]))
        self.assertEqual((len(lines["dev.en"]), len(lines["test.en"])), (3, 4))
        held_out = {english_key(en) for en in lines["dev.en"] + lines["test.en"]}
        self.assertFalse(held_out & {english_key(en) for en in lines["train.en"]})
        everything = dict(zip(lines["train.en"] + lines["dev.en"] + lines["test.en"],
                              lines["train.de"] + lines["dev.de"] + lines["test.de"]))
        self.assertEqual(everything["Open file number 7"], "Datei Nummer 7 öffnen")
        self.assertEqual(everything["Bold move"], "Fetter Zug")
        self.assertEqual(everything["%d files"], "%d Dateien")
        self.assertEqual(everything["'quoted' here"], "hier 'zitiert'")
        self.assertEqual(everything["cannot read %s: error 3"],
                         "%s kann nicht gelesen werden: Fehler 3")
        self.assertNotIn("Other", everything)  # de_DE is not read
        self.assertNotIn("Yes", everything)

        manifest = json.loads(read(out, "MANIFEST.json"))
        counts = manifest["counts"]
        self.assertEqual(counts["raw"], 40 + 8 + 22)
        self.assertEqual(counts["placeholder_mismatch"], 1)   # "%d file" -> "Eine Datei"
        self.assertEqual(counts["identical"], 1)
        self.assertEqual(counts["credits"], 1)
        self.assertEqual(counts["duplicate_in_package"], 1)   # Save in two contexts
        self.assertEqual(counts["duplicate_of_earlier_package"], 1)
        self.assertEqual(counts["clean"], len(everything))
        self.assertEqual(counts["train"] + counts["dev"] + counts["test"]
                         + counts["left_out_of_train"], counts["clean"])
        self.assertEqual(manifest["packages"]["cli-tools"]["version"], "1.0-1")
        self.assertEqual(manifest["options"]["packages"], ["gui-data", "cli-tools"])
        self.assertEqual(set(manifest["files"]), set(OUTPUTS[:6]))
        self.assertEqual(manifest["files"]["dev.de"]["lines"], 3)
        mask = os.umask(0)
        os.umask(mask)
        self.assertEqual(os.stat(os.path.join(out, "train.en")).st_mode & 0o777,
                         0o666 & ~mask)

    def test_byte_identical_across_runs_and_hash_seeds(self):
        outputs = []
        for seed in ("0", "12345"):
            out = os.path.join(self.tmp, f"out-{seed}")
            env = dict(os.environ, PYTHONHASHSEED=seed)
            result = subprocess.run(
                [sys.executable, SCRIPT, "--offline", "--cache", self.cache, "--out", out,
                 "--dev-size", "3", "--test-size", "4", "--packages", "gui-data",
                 "cli-tools"], env=env, capture_output=True, text=True)
            self.assertEqual(result.returncode, 0, result.stderr)
            outputs.append({name: read(out, name) for name in OUTPUTS})
        self.assertEqual(outputs[0], outputs[1])
        # A rerun into the same folder replaces the files with the same bytes.
        code, log = build(self.cache, os.path.join(self.tmp, "out-0"))
        self.assertEqual(code, 0, log)
        self.assertEqual({name: read(os.path.join(self.tmp, "out-0"), name)
                          for name in OUTPUTS}, outputs[0])
        self.assertEqual([n for n in os.listdir(os.path.join(self.tmp, "out-0"))
                          if n.startswith(".tmp")], [])

    def test_other_seed_other_test_set(self):
        first, second = os.path.join(self.tmp, "a"), os.path.join(self.tmp, "b")
        self.assertEqual(build(self.cache, first)[0], 0)
        self.assertEqual(build(self.cache, second, "--seed", "another")[0], 0)
        self.assertNotEqual(read(first, "test.en"), read(second, "test.en"))

    def test_offline_missing_package(self):
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            code = main(["--offline", "--cache", self.cache, "--out",
                         os.path.join(self.tmp, "out"), "--packages", "gui-data", "absent"])
        self.assertEqual(code, 1)
        self.assertIn("--offline", stderr.getvalue())
        self.assertIn("absent", stderr.getvalue())

    def test_missing_apt_get(self):
        env = dict(os.environ, PATH=os.path.join(self.tmp, "empty-path"))
        result = subprocess.run([sys.executable, SCRIPT, "--cache", self.cache, "--out",
                                 os.path.join(self.tmp, "out"), "--packages", "gui-data"],
                                env=env, capture_output=True, text=True)
        self.assertEqual(result.returncode, 1)
        self.assertIn("apt-get not found", result.stderr)

    def test_help(self):
        result = subprocess.run([sys.executable, SCRIPT, "--help"], capture_output=True,
                                text=True)
        self.assertEqual(result.returncode, 0)
        for flag in ("--out", "--cache", "--seed", "--dev-size", "--test-size", "--packages",
                     "--offline"):
            self.assertIn(flag, result.stdout)


if __name__ == "__main__":
    unittest.main()
