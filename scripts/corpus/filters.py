"""Which cleaned pairs the corpus keeps. The first rule that matches drops a pair, and each
rule's drops are counted under its name in the manifest."""

import re

# Every rule, in the order they are tried.
REASONS = (
    "empty",                 # a side is empty after cleaning
    "credits",               # "translator-credits" and friends: names, not translations
    "duplicate_in_package",  # the same pair already kept from the same package
    "duplicate_of_earlier_package",
    "no_two_letter_word",    # "%s: %s", "1:1", "A": nothing to translate
    "identical",             # English == German: names, codes, untranslated labels
    "untranslated",          # the English copied into the German, maybe recapitalised
    "too_long",              # over MAX_TOKENS tokens on a side: licence texts, help pages
    "length_ratio",          # one side far longer than the other: misaligned or partial
)

MAX_TOKENS = 80
MAX_RATIO = 2.5
MIN_UNTRANSLATED_TOKENS = 3

# msgids whose translation is the translators' names (GNOME, KDE, Qt conventions).
CREDIT_MSGIDS = frozenset({
    "translator-credits", "translator_credits", "translator credits", "translators",
    "your names", "your emails", "name of translators", "email of translators",
    "roles_of_translators", "credit_for_translators",
})
_TWO_LETTERS = re.compile(r"[^\W\d_]{2}")


def tokens(text):
    return text.split()


def length_ratio_ok(english, german):
    """(len(de) + 10) / (len(en) + 10) within [1/MAX_RATIO, MAX_RATIO]; the +10 keeps short
    labels ("OK" -> "Ok.") from failing on a character or two."""
    ratio = (len(german) + 10) / (len(english) + 10)
    return 1 / MAX_RATIO <= ratio <= MAX_RATIO


class PairFilter:
    """Stateful: remembers the pairs already kept, per package and overall. Only kept pairs
    count as seen, so each copy of a dropped pair is counted under the rule that drops it
    (every copy of "OK" -> "OK" is 'identical', not 'duplicate')."""

    def __init__(self):
        self.counts = {reason: 0 for reason in REASONS}
        self._seen_here = set()
        self._seen_before = set()

    def start_package(self):
        self._seen_before |= self._seen_here
        self._seen_here = set()

    def reason(self, english, german):
        """The name of the first rule that drops the pair, or None to keep it."""
        if not english or not german:
            return "empty"
        if english.strip().lower() in CREDIT_MSGIDS:
            return "credits"
        pair = (english, german)
        if pair in self._seen_here:
            return "duplicate_in_package"
        if pair in self._seen_before:
            return "duplicate_of_earlier_package"
        if not _TWO_LETTERS.search(english) or not _TWO_LETTERS.search(german):
            return "no_two_letter_word"
        if english == german:
            return "identical"
        en_tokens, de_tokens = tokens(english), tokens(german)
        if len(en_tokens) >= MIN_UNTRANSLATED_TOKENS and english.lower() in german.lower():
            return "untranslated"  # "C64 sid demuxer" -> "C64 SID Demuxer"
        if len(en_tokens) > MAX_TOKENS or len(de_tokens) > MAX_TOKENS:
            return "too_long"
        if not length_ratio_ok(english, german):
            return "length_ratio"
        return None

    def keep(self, english, german):
        """True to keep the pair; a dropped pair is counted under its reason."""
        reason = self.reason(english, german)
        if reason is None:
            self._seen_here.add((english, german))
            return True
        self.counts[reason] += 1
        return False
