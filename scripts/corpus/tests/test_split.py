"""The split: no dev or test English key in train, and no randomness."""

import unittest

from corpus.split import english_key, split


def corpus():
    pairs = []
    for i in range(300):
        pairs.append((f"Message number {i}", f"Nachricht Nummer {i}"))
        if i % 3 == 0:
            pairs.append((f"message number {i}.", f"Nachricht Nummer {i}."))
    return pairs


class SplitTest(unittest.TestCase):
    def test_key(self):
        self.assertEqual(english_key("Save As…"), english_key("save as"))
        self.assertEqual(english_key("Really quit?!"), "really quit")

    def test_no_dev_or_test_key_in_train(self):
        pairs = corpus()
        train, dev, test, left_out = split(pairs, "seed", 20, 30)
        self.assertEqual((len(dev), len(test)), (20, 30))
        held_out = {english_key(en) for en, _ in dev + test}
        self.assertEqual(len(held_out), 50)  # one pair per key
        self.assertFalse(held_out & {english_key(en) for en, _ in train})
        self.assertEqual(len(train) + len(dev) + len(test) + left_out, len(pairs))
        self.assertEqual([p for p in pairs if p in train], train)  # corpus order kept

    def test_deterministic_and_seeded(self):
        pairs = corpus()
        self.assertEqual(split(pairs, "seed", 20, 30), split(list(pairs), "seed", 20, 30))
        self.assertNotEqual(split(pairs, "seed", 20, 30)[2], split(pairs, "other", 20, 30)[2])

    def test_too_small(self):
        with self.assertRaises(ValueError):
            split(corpus()[:10], "seed", 5, 6)


if __name__ == "__main__":
    unittest.main()
