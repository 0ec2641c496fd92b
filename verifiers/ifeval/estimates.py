"""Offline stand-ins for the third-party judgements IFBench leans on: syllables, emoji, verbs.

IFBench asks ``syllapy`` for syllable counts (a pronunciation dictionary with a rule-based
fallback), the ``emoji`` package whether a character is an emoji, and NLTK's perceptron
tagger whether a response opens with a verb. None of them is installed here and the
tagger's model is a download, so each is approximated:

- ``count_syllables``: vowel groups, a silent final ``e`` dropped, a consonant + ``le``
  ending kept as a syllable (syllapy's own fallback rules). Words the dictionary knows
  and the rules miscount ("queue", "recipe") can differ.
- ``is_emoji``: the Unicode blocks and code points that hold emoji. A few symbols in
  those blocks that the emoji package does not list count as emoji here.
- ``starts_with_verb``: the first word is one of the common English verbs listed below
  (any inflection, auxiliaries included; modals are not verbs to the tagger, which tags
  them ``MD``) or a gerund ending in ``-ing``. The tagger's context-dependent readings
  ("Set the table" vs "Set theory") are not reproduced.
"""

from __future__ import annotations

_VOWELS = "aeiouy"

_EMOJI_RANGES = (
    (0x1F000, 0x1FAFF),  # mahjong, cards, enclosed supplements, pictographs, symbols
    (0x2600, 0x27BF),  # miscellaneous symbols and dingbats
    (0x2300, 0x23FF),  # technical: watch, hourglass, keyboard, media controls
    (0x2B00, 0x2BFF),  # arrows, stars, squares and circles
    (0x2190, 0x21FF),  # arrows
    (0x25A0, 0x25FF),  # geometric shapes
)
_EMOJI_POINTS = frozenset(
    [0x00A9, 0x00AE, 0x203C, 0x2049, 0x2122, 0x2139, 0x24C2, 0x2934, 0x2935, 0x3030, 0x303D] + [0x3297, 0x3299]
)

_VERB_FORMS = """
be is am are was were been being do does did done doing have has had having go goes went
gone going get gets got make makes made take takes took taken give gives gave given come
comes came see sees saw seen know knows knew known think thinks thought say says said tell
tells told ask asks asked let lets use uses used find finds found write writes wrote written
read reads explain explains explained describe describes described imagine imagines consider
considers considered create creates created list lists listed provide provides provided
start starts started begin begins began keep keeps kept try tries tried look looks looked
put puts bring brings brought show shows showed shown help helps helped remember remembers
note notes notice notices follow follows followed choose chooses chose compare compares
discuss discusses summarize summarizes identify identifies include included
turn turns turned leave leaves left stop stops stopped enjoy enjoys enjoyed picture
pictures travel travels traveled walk walks walked run runs ran eat eats ate drink drinks
drank sing sings sang play plays played learn learns learned build builds built
draw draws drew check checks checked add adds added mix mixes mixed cook cooks cooked
open opens opened close closes closed join joins joined meet meets met watch watches
watched listen listens listened hear hears heard feel feels felt need needs needed want
wants wanted like likes liked love loves loved hope hopes hoped believe believes believed
become becomes became seem seems seemed plan plans planned visit visits visited
""".split()
VERBS = frozenset(_VERB_FORMS)
_NOT_GERUNDS = frozenset(
    "thing something nothing anything everything king ring sing wing spring string morning "
    "evening during ceiling building wedding pudding clothing feeling meaning".split()
)


def count_syllables(word: str) -> int:
    """Syllables in one word by spelling rules; 0 for a word without letters."""
    word = "".join(ch for ch in word.lower() if ch.isalpha())
    if not word:
        return 0
    count = int(word[0] in _VOWELS)
    pairs = zip(word, word[1:], strict=False)
    count += sum(1 for prev, ch in pairs if ch in _VOWELS and prev not in _VOWELS)
    if word.endswith("e"):
        count -= 1
    if word.endswith("le") and len(word) > 2 and word[-3] not in _VOWELS:
        count += 1
    return max(count, 1)


def is_emoji(char: str) -> bool:
    """Whether one character lies where Unicode keeps emoji."""
    if len(char) != 1:
        return False
    point = ord(char)
    return point in _EMOJI_POINTS or any(low <= point <= high for low, high in _EMOJI_RANGES)


def starts_with_verb(first_word: str) -> bool:
    """Whether a response's first word token reads as a verb (see the module docstring)."""
    word = first_word.lower()
    if word in VERBS:
        return True
    return word.endswith("ing") and len(word) > 4 and word.isalpha() and word not in _NOT_GERUNDS
