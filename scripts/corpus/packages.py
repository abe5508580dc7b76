"""Which Debian packages feed the corpus and which of their files are German catalogs."""

import re

# Order matters: a pair already taken from an earlier package counts as a duplicate of it,
# so the larger, better-maintained catalogs come first.
DEFAULT_PACKAGES = (
    "libreoffice-l10n-de", "gcc-12-locales", "blender-data", "inkscape", "gimp-data",
    "digikam-data", "kicad", "gramps", "vlc-l10n", "evolution-common", "git",
    "gnucash-common", "krita-l10n", "util-linux-locales", "darktable", "gnumeric-common",
    "claws-mail-i18n", "libgtk-3-common", "pidgin-data", "vim-runtime", "libgtk2.0-common",
    "gnome-control-center-data", "gnupg-l10n", "coreutils", "filezilla-common",
    "kdenlive-data", "evolution-data-server-common", "e2fsprogs-l10n", "libgtk-4-common",
    "libc-l10n", "shotwell-common", "aptitude-common", "xkb-data", "libglib2.0-data", "dpkg",
    "nautilus-data", "binutils-common", "rhythmbox-data", "sudo", "synaptic", "procps",
    "gedit-common", "gettext", "wget", "gnome-shell-common", "tar", "login", "bash", "make",
    "apt", "diffutils", "man-db", "findutils", "sed", "grep", "debconf-i18n", "iso-codes",
)

# German catalogs only: ".../de/LC_MESSAGES/x.mo" (LibreOffice keeps its own under
# program/resource/, vim under vim90/lang/), never de_DE, de_AT or de_CH variants.
# A .po file in the same place is read too, so a folder of hand-made catalogs can stand
# in for a package.
CATALOG_PATH = re.compile(r"(^|/)de/LC_MESSAGES/[^/]+\.(mo|po)$")

# iso-codes' lists of languages, subdivisions and former countries are proper names, nearly
# all identical in both languages or transliterated: they would teach copying, not
# translation.
SKIPPED_CATALOGS = frozenset({"iso_639-3", "iso_639-5", "iso_3166-2", "iso_3166-3"})


def is_catalog(path):
    """True for a German catalog path (relative, '/'-separated) that the corpus reads."""
    if not CATALOG_PATH.search(path):
        return False
    stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return stem not in SKIPPED_CATALOGS
