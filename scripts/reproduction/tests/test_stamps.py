"""When a folder is reused, continued or started again, and the stamp written atomically."""

import os
import subprocess
import tempfile
import unittest

from reproduction import stamps

KEY = stamps.make_key("abc", "demo", "cpu", ["/build/a/gru_nmt", "experiment", "--budget", "demo"])


class DecideTest(unittest.TestCase):
    def setUp(self):
        self.scratch = tempfile.TemporaryDirectory()
        self.folder = os.path.join(self.scratch.name, "gru_nmt")

    def tearDown(self):
        self.scratch.cleanup()

    def test_no_folder_or_an_empty_one_starts_fresh(self):
        self.assertEqual("fresh", stamps.decide(self.folder, KEY, False))
        os.makedirs(self.folder)
        self.assertEqual("fresh", stamps.decide(self.folder, KEY, False))

    def test_a_finished_run_of_the_same_key_is_reused_unless_forced(self):
        stamps.write_stamp(self.folder, KEY, "done", 12.5)
        self.assertEqual("reuse", stamps.decide(self.folder, KEY, False))
        self.assertEqual("fresh", stamps.decide(self.folder, KEY, True))

    def test_an_interrupted_run_of_the_same_key_continues(self):
        stamps.write_stamp(self.folder, KEY, "running", 3.0)
        self.assertEqual("continue", stamps.decide(self.folder, KEY, False))

    def test_another_version_budget_or_flag_starts_fresh(self):
        stamps.write_stamp(self.folder, KEY, "done")
        for other in (stamps.make_key("abd", "demo", "cpu", ["x", "experiment", "--budget",
                                                             "demo"]),
                      stamps.make_key("abc", "long", "cpu", ["x", "experiment", "--budget",
                                                             "demo"]),
                      stamps.make_key("abc", "demo", "cpu", ["x", "experiment"])):
            self.assertEqual("fresh", stamps.decide(self.folder, other, False))

    def test_the_programs_path_is_not_part_of_the_key(self):
        stamps.write_stamp(self.folder, KEY, "done")
        elsewhere = stamps.make_key("abc", "demo", "cpu",
                                    ["/build/b/gru_nmt", "experiment", "--budget", "demo"])
        self.assertEqual("reuse", stamps.decide(self.folder, elsewhere, False))

    def test_a_folder_without_a_readable_stamp_starts_fresh(self):
        os.makedirs(self.folder)
        with open(os.path.join(self.folder, stamps.STAMP), "w", encoding="utf-8") as f:
            f.write("{not json")
        self.assertEqual("fresh", stamps.decide(self.folder, KEY, False))

    def test_seconds_add_up_over_sessions(self):
        stamps.write_stamp(self.folder, KEY, "running", 10.0)
        stamps.write_stamp(self.folder, KEY, "done", 5.0, previous_seconds=10.0)
        stamp = stamps.read_stamp(self.folder)
        self.assertEqual(15.0, stamp["seconds"])
        self.assertEqual("done", stamp["state"])
        self.assertEqual(KEY, stamp["key"])
        self.assertFalse(os.path.exists(os.path.join(self.folder, stamps.STAMP + ".tmp")))

    def test_set_aside_keeps_one_previous_folder(self):
        self.assertEqual("", stamps.set_aside(self.folder))
        for content in ("first", "second"):
            os.makedirs(self.folder)
            with open(os.path.join(self.folder, "file"), "w", encoding="utf-8") as f:
                f.write(content)
            moved = stamps.set_aside(self.folder)
        self.assertFalse(os.path.exists(self.folder))
        with open(os.path.join(moved, "file"), encoding="utf-8") as f:
            self.assertEqual("second", f.read())


class SourceVersionTest(unittest.TestCase):
    def test_a_commit_and_the_digest_of_changes_after_it(self):
        with tempfile.TemporaryDirectory() as repository:
            def git(*arguments):
                subprocess.run(["git", "-C", repository, *arguments], check=True,
                               capture_output=True)
            git("init", "-q")
            path = os.path.join(repository, "a.txt")
            with open(path, "w", encoding="utf-8") as f:
                f.write("one\n")
            git("add", "a.txt")
            git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
            clean = stamps.source_version(repository)
            self.assertRegex(clean, r"^[0-9a-f]{40}$")
            with open(path, "w", encoding="utf-8") as f:
                f.write("two\n")
            changed = stamps.source_version(repository)
            self.assertRegex(changed, "^" + clean + r"\+[0-9a-f]{12}$")
            self.assertEqual(changed, stamps.source_version(repository))

    def test_outside_a_repository(self):
        with tempfile.TemporaryDirectory() as folder:
            self.assertEqual("unknown", stamps.source_version(folder))


if __name__ == "__main__":
    unittest.main()
