"""Debian packages into a local cache, and their German catalogs out of them.

Layout of the cache folder:
    debs/NAME_VERSION_ARCH.deb        as apt-get download names them
    catalogs/NAME/...                 the package's German catalogs, paths as in the package
    catalogs/NAME/.source.json        which .deb (file name, version, SHA-256) they came from

A package is downloaded only when the cache lacks the .deb that apt would fetch now (same
file name and SHA-256), and extracted only when its catalogs came from another .deb, so a
second run touches the network only to ask apt for file names. With --offline, apt is not
asked at all: the catalogs already extracted are used as they are, which is also how tests
and users with their own catalogs stand in a folder of .mo or .po files for a package.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.parse

from .packages import is_catalog

SOURCE_FILE = ".source.json"
APT_LISTS = "/var/lib/apt/lists"


class FetchError(RuntimeError):
    """A package could not be fetched or extracted; the message says why and what to do."""


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def require_tool(name, why):
    if shutil.which(name) is None:
        raise FetchError(f"{name} not found: it is needed to {why} (Debian and Ubuntu have "
                         f"it; elsewhere, use --offline with a cache of extracted catalogs)")


def _apt_lists_missing():
    try:
        return not any(name.endswith(("Packages", "Packages.lz4", "Packages.gz", "Packages.xz"))
                       for name in os.listdir(APT_LISTS))
    except OSError:
        return True


def _apt_failure(command, result):
    message = (result.stderr or result.stdout).strip()
    hint = ""
    if "Unable to locate package" in message or "has no installation candidate" in message:
        hint = ("; apt's package lists are missing: run 'apt-get update' once (as root)"
                if _apt_lists_missing() else
                "; if the name is right, the package lists may be stale: run 'apt-get update'")
    return FetchError(f"'{' '.join(command[:3])} ...' failed: {message}{hint}")


def resolve(packages):
    """{package: (deb file name, size, sha256)} that apt would download now, without
    downloading anything."""
    require_tool("apt-get", "download the packages")
    command = ["apt-get", "download", "--print-uris", *packages]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise _apt_failure(command, result)
    found = {}
    for line in result.stdout.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[0].startswith("'") and fields[3].startswith("SHA256:"):
            filename = fields[1]
            found[filename.split("_", 1)[0]] = (filename, int(fields[2]), fields[3][7:].lower())
    missing = [p for p in packages if p not in found]
    if missing:
        raise FetchError(f"apt-get gave no download for: {', '.join(missing)}")
    return found


def version_of(deb_filename):
    """'bash_5.2.15-2%2bb2_amd64.deb' -> '5.2.15-2+b2' (apt escapes ':' and '+')."""
    return urllib.parse.unquote(deb_filename.split("_")[1])


def download(package, filename, sha256, debs_dir):
    """The cached .deb's path, downloading it first if absent or different."""
    target = os.path.join(debs_dir, filename)
    if os.path.isfile(target) and sha256_of(target) == sha256:
        return target
    os.makedirs(debs_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=debs_dir, prefix=".download-") as scratch:
        command = ["apt-get", "download", package]
        result = subprocess.run(command, cwd=scratch, capture_output=True, text=True)
        if result.returncode != 0:
            raise _apt_failure(command, result)
        fetched = os.path.join(scratch, filename)
        if not os.path.isfile(fetched):
            raise FetchError(f"apt-get download {package} did not produce {filename}")
        if sha256_of(fetched) != sha256:
            raise FetchError(f"{filename}: SHA-256 differs from apt's index; run it again")
        os.replace(fetched, target)
    return target


def read_source(catalog_dir):
    try:
        with open(os.path.join(catalog_dir, SOURCE_FILE), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def extract(package, deb_path, sha256, catalogs_dir):
    """Extract the package's German catalogs (regular files only: iso-codes' symlinked
    duplicates are skipped) into catalogs/PACKAGE, replacing what was there."""
    require_tool("dpkg-deb", "unpack the packages")
    os.makedirs(catalogs_dir, exist_ok=True)
    final = os.path.join(catalogs_dir, package)
    scratch = tempfile.mkdtemp(dir=catalogs_dir, prefix=f".{package}-")
    try:
        with subprocess.Popen(["dpkg-deb", "--fsys-tarfile", deb_path],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
            try:
                _extract_catalogs(process.stdout, scratch)
            except tarfile.TarError as error:
                process.kill()
                raise FetchError(f"{deb_path}: unreadable package contents ({error})")
            errors = process.stderr.read().decode("utf-8", "replace").strip()
        if process.returncode != 0:
            raise FetchError(f"dpkg-deb could not unpack {deb_path}: {errors}")
        source = {"package": package, "deb": os.path.basename(deb_path),
                  "version": version_of(os.path.basename(deb_path)), "sha256": sha256}
        with open(os.path.join(scratch, SOURCE_FILE), "w", encoding="utf-8") as f:
            json.dump(source, f, indent=2, sort_keys=True)
        if os.path.isdir(final):
            shutil.rmtree(final)
        os.replace(scratch, final)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return final


def _extract_catalogs(stream, folder):
    """Copy the German catalogs out of a tar stream (read once, in order)."""
    with tarfile.open(fileobj=stream, mode="r|") as archive:
        for member in archive:
            name = os.path.normpath(member.name.lstrip("./"))
            if not member.isfile() or name.startswith("..") or not is_catalog(name):
                continue
            path = os.path.join(folder, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as out:
                shutil.copyfileobj(archive.extractfile(member), out)


def fetch(packages, cache, offline=False, log=None):
    """{package: (catalog folder, source record)} for every package, from the cache when
    it is current. Raises FetchError with an actionable message."""
    log = log or sys.stderr
    debs_dir = os.path.join(cache, "debs")
    catalogs_dir = os.path.join(cache, "catalogs")
    result = {}
    wanted = None if offline else resolve(packages)
    for package in packages:
        folder = os.path.join(catalogs_dir, package)
        source = read_source(folder)
        if offline:
            if source is None:
                source = _offline_extract(package, debs_dir, catalogs_dir)
            result[package] = (folder, source)
            continue
        filename, size, sha256 = wanted[package]
        if source is None or source.get("sha256") != sha256:
            print(f"  {package}: fetching {filename} ({size / 1e6:.1f} MB)", file=log)
            deb = download(package, filename, sha256, debs_dir)
            extract(package, deb, sha256, catalogs_dir)
            source = read_source(folder)
        result[package] = (folder, source)
    return result


def _offline_extract(package, debs_dir, catalogs_dir):
    candidates = sorted(name for name in (os.listdir(debs_dir) if os.path.isdir(debs_dir)
                                          else []) if name.startswith(package + "_")
                        and name.endswith(".deb"))
    if len(candidates) != 1:
        why = "no" if not candidates else f"{len(candidates)} candidate"
        raise FetchError(f"--offline: {why} .deb for {package} in {debs_dir} and no "
                         f"extracted catalogs in {os.path.join(catalogs_dir, package)} "
                         f"(run once without --offline to fill the cache)")
    deb = os.path.join(debs_dir, candidates[0])
    folder = extract(package, deb, sha256_of(deb), catalogs_dir)
    return read_source(folder)
