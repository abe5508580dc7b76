"""Train/dev/test split without random numbers and without English leaking across splits.

Software messages repeat with small variations ("Save", "Save.", "save:"), so a random split
would put near-copies of test segments into training. Pairs are grouped by an English key
(lowercased, trailing sentence punctuation removed); groups are ordered by a SHA-256 hash of
the seed and the key, so the order depends on nothing but the data and the seed (no Python
hash randomisation, no dict or set order). The first groups give one pair each to test, the
next to dev, and the rest of those groups is left out of train: no dev or test key occurs in
train.
"""

import hashlib

_TRAILING = ".:!?\u2026 "


def english_key(english):
    return english.lower().rstrip(_TRAILING)


def _group_order(seed, key):
    return hashlib.sha256(f"{seed}\x00{key}".encode("utf-8")).hexdigest()


def split(pairs, seed, dev_size, test_size):
    """pairs (in corpus order) -> (train, dev, test, left_out).

    Test and dev are in hash order, train keeps the corpus order; left_out counts the pairs
    that share a key with a dev or test pair and so belong to no split. Within a group, the
    pair taken is the first in corpus order."""
    groups = {}
    for index, (english, _) in enumerate(pairs):
        groups.setdefault(english_key(english), []).append(index)
    if dev_size + test_size > len(groups):
        raise ValueError(f"dev ({dev_size}) and test ({test_size}) need more English keys "
                         f"than the corpus has ({len(groups)})")
    ordered = sorted(groups, key=lambda key: (_group_order(seed, key), key))
    test_keys = ordered[:test_size]
    dev_keys = ordered[test_size:test_size + dev_size]
    held_out = set(test_keys) | set(dev_keys)
    test = [pairs[groups[key][0]] for key in test_keys]
    dev = [pairs[groups[key][0]] for key in dev_keys]
    train = [pair for pair in pairs if english_key(pair[0]) not in held_out]
    left_out = len(pairs) - len(train) - len(dev) - len(test)
    return train, dev, test, left_out
