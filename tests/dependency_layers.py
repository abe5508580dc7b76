"""The library's layers, checked: no file includes a header of a layer above its own.

Each folder of the libraries may include from the folders listed for it here and from its own;
nothing outside backends/ reaches into a backend's own folders (backends/cpu/, backends/cuda/)
but the NCCL collectives, which are CUDA's. The same order is drawn in the README's layout
table and in each folder's README. Run by ctest; prints each wrong include and fails."""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent

# Lowest first: each may use those before it that are listed.
MAY_USE = {
    "base": set(),
    "profiler": {"base"},
    "backends": {"base", "profiler"},
    "core": {"base", "profiler", "backends"},
    "autograd": {"base", "profiler", "backends", "core"},
    "nn": {"base", "profiler", "backends", "core", "autograd"},
    "optim": {"base", "profiler", "backends", "core", "autograd", "nn"},
    "io": {"base", "profiler", "backends", "core", "autograd", "nn", "optim"},
    "data": {"base", "profiler", "backends", "core", "autograd", "nn", "optim", "io"},
    "distributed": {"base", "profiler", "backends", "core", "autograd", "nn", "optim"},
    # The text toolkit, a library of its own (normgrad::text) over the core.
    "decoding": {"base", "profiler", "backends", "core", "autograd", "nn"},
    "text": {"base", "profiler", "backends", "core", "autograd", "nn", "optim", "io", "data"},
}
BACKEND_INSIDES = ("backends/cpu/", "backends/cuda/")
# CUDA's own collectives use its streams and device guard.
MAY_REACH_INSIDE = {"distributed/nccl_collectives.cpp"}
SOURCES = ("*.h", "*.cpp", "*.cu", "*.cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def problems():
    for folder, allowed in MAY_USE.items():
        for pattern in SOURCES:
            for path in sorted((ROOT / folder).rglob(pattern)):
                name = path.relative_to(ROOT).as_posix()
                for included in INCLUDE.findall(path.read_text(encoding="utf-8")):
                    top = included.split("/", 1)[0]
                    if top in MAY_USE and top != folder and top not in allowed:
                        yield f"{name}: includes {included}, from a layer above {folder}/"
                    if (folder != "backends" and included.startswith(BACKEND_INSIDES)
                            and name not in MAY_REACH_INSIDE):
                        yield f"{name}: includes {included}, inside a backend"


def main():
    found = list(problems())
    for line in found:
        print(line)
    print(f"{len(found)} includes against the layers" if found else "layers: every include points down")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
