"""When an experiment's folder can be reused: each folder scripts/reproduce fills holds a stamp,
reproduce.json, with the key it was made under (the source version, the budget and the whole
command line) and whether the program finished.

  reuse     the same key, finished: the results stand (unless --force)
  continue  the same key, interrupted: the program runs again and resumes its runs from their
            checkpoints
  fresh     no folder yet, or another key, or --force: an existing folder is moved aside to
            <folder>.previous (one is kept) and the program starts from nothing
"""

import datetime
import hashlib
import json
import os
import shutil
import subprocess

STAMP = "reproduce.json"


def source_version(repository: str) -> str:
    """The commit checked out, with a digest of uncommitted changes to tracked files after it
    ("<sha>+<digest>"), or "unknown" outside a git work tree."""
    def git(*arguments):
        return subprocess.run(["git", "-C", repository, *arguments], capture_output=True,
                              check=True).stdout
    try:
        commit = git("rev-parse", "HEAD").decode().strip()
        changes = git("diff", "HEAD", "--no-ext-diff", "--binary")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    if not changes:
        return commit
    return commit + "+" + hashlib.sha256(changes).hexdigest()[:12]


def make_key(version: str, budget: str, device: str, command: list) -> dict:
    """What makes two runs of an experiment the same. The program's own path is left out of the
    command (two build trees of one version build the same program)."""
    return {"version": version, "budget": budget, "device": device,
            "arguments": [str(a) for a in command[1:]]}


def read_stamp(folder: str):
    """The folder's stamp as a dict, or None when it has none or an unreadable one."""
    try:
        with open(os.path.join(folder, STAMP), encoding="utf-8") as f:
            stamp = json.load(f)
    except (OSError, ValueError):
        return None
    return stamp if isinstance(stamp, dict) and "key" in stamp else None


def decide(folder: str, key: dict, force: bool) -> str:
    """"reuse", "continue" or "fresh" (see the module's comment)."""
    if not os.path.isdir(folder) or not os.listdir(folder):
        return "fresh"
    stamp = read_stamp(folder)
    if force or stamp is None or stamp["key"] != key:
        return "fresh"
    return "reuse" if stamp.get("state") == "done" else "continue"


def set_aside(folder: str) -> str:
    """Moves a folder to <folder>.previous, replacing an older one there; returns that path, or
    "" when there was nothing to move."""
    if not os.path.exists(folder):
        return ""
    previous = folder.rstrip("/") + ".previous"
    if os.path.exists(previous):
        shutil.rmtree(previous)
    os.replace(folder, previous)
    return previous


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def write_stamp(folder: str, key: dict, state: str, seconds: float = 0.0,
                previous_seconds: float = 0.0) -> None:
    """Writes the stamp atomically (a temporary file renamed over the old one). `seconds` is the
    time of this session; a continued experiment adds the time its earlier sessions took."""
    os.makedirs(folder, exist_ok=True)
    stamp = {"key": key, "state": state, "written": _now(),
             "seconds": round(previous_seconds + seconds, 1)}
    temporary = os.path.join(folder, STAMP + ".tmp")
    with open(temporary, "w", encoding="utf-8") as f:
        json.dump(stamp, f, indent=2)
        f.write("\n")
    os.replace(temporary, os.path.join(folder, STAMP))
