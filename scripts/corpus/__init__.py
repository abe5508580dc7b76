"""English-German parallel corpus from the German gettext catalogs of Debian packages.

Debian packages ship German translations of their messages as gettext catalogs; each
msgid (English) with its msgstr (German) is a parallel segment. This package fetches the
packages with apt-get, reads their catalogs, cleans the pairs, filters them, splits them into
train/dev/test and writes plain-text files (one segment per line, line i of the English file
aligned with line i of the German one) with a manifest of versions, counts and checksums.
Only the Python standard library is used; the command is scripts/build_corpus.
"""
