"""Per-instruction tables: a followed and a broken response for each of IFBench's 58 added ids.

Upstream cases are in ``test_ifeval_suites_upstream.py``; these are ours, and they also
cover the six ids IFBench's own tests leave out.
"""

from __future__ import annotations

import pytest

from verifiers.ifeval import evaluate_response
from verifiers.ifeval.estimates import count_syllables, is_emoji, starts_with_verb
from verifiers.ifeval.suites import SUITES
from verifiers.ifeval.wordlists import EUROPEAN_CAPITALS_BY_LATITUDE

REQUEST = "Describe the ocean in two sentences."
AFRICA = ["Zimbabwe", "Zambia", "Uganda"] + [f"Country {chr(90 - i // 26)}{chr(90 - i % 26)}" for i in range(50)]
CAPITALS = ", ".join(EUROPEAN_CAPITALS_BY_LATITUDE)
MCQ = "\n".join(f"Question {n}\n{'Why ' * n}art?\nA) a\nB) b\nC) c\nD) d\nE) e" for n in range(1, 5))
CITY_CSV = "ID,Country,City,Year,Count\n" + "\n".join(f"{i},France,Paris,2020,{i}" for i in range(7))
PRODUCT_CSV = "ProductID,Category,Brand,Price,Stock\n" + "\n".join(f'{i},"Tools & more",Acme,9,{i}' for i in range(14))
STUDENT_CSV = '"StudentID"\t"Subject"\t"Grade"\t"Semester"\t"Score"\n' + "\n".join(
    f'"{i}"\t"Math"\t"A"\t"Fall"\t"90"' for i in range(3)
)
CASES = [
    ("count:word_count_range", {"min_words": 2, "max_words": 3}, "Calm blue sea.", True),
    ("count:word_count_range", {"min_words": 4, "max_words": 9}, "Calm blue sea.", False),
    ("count:unique_word_count", {"N": 3}, "Sea, sky and sun.", True),
    ("count:unique_word_count", {"N": 3}, "sea Sea SEA.", False),
    ("count:conjunctions", {"small_n": 2}, "Tea and cake but no jam.", True),
    ("count:conjunctions", {"small_n": 2}, "Tea and cake and jam.", False),
    ("count:person_names", {"N": 2}, "Emma met Liam.", True),
    ("count:person_names", {"N": 2}, "Emma met Bob.", False),
    ("count:numbers", {"N": 2}, "I have 3 cats and 1,000 fish.", True),
    ("count:numbers", {"N": 2}, "I have 3 cats.", False),
    ("count:punctuation", {}, "Wait, what?! Yes: fine; go. Really? Ok!", True),
    ("count:punctuation", {}, "Wait, what? Yes: fine; go. Ok!", False),
    ("count:words_japanese", {"N": 2}, "I 猫 like 犬", True),
    ("count:words_japanese", {"N": 2}, "I cat like 犬", False),
    ("count:pronouns", {"N": 3}, "She told him that they left.", True),
    ("count:pronouns", {"N": 3}, "The cat sat.", False),
    (
        "count:keywords_multiple",
        {"keyword1": "a1", "keyword2": "b2", "keyword3": "c3", "keyword4": "d4", "keyword5": "e5"},
        "a1 " + "b2 " * 2 + "c3 " * 3 + "d4 " * 5 + "e5 " * 7,
        True,
    ),
    (
        "count:keywords_multiple",
        {"keyword1": "a1", "keyword2": "b2", "keyword3": "c3", "keyword4": "d4", "keyword5": "e5"},
        "a1 b2 c3 d4 e5",
        False,
    ),
    ("ratio:stop_words", {"percentage": 50}, "Ocean waves crash on rocks.", True),
    ("ratio:stop_words", {"percentage": 20}, "It is in the sea.", False),
    ("ratio:sentence_type", {}, "It is calm. It is blue. Is it deep?", True),
    ("ratio:sentence_type", {}, "It is calm. Is it deep?", False),
    ("ratio:sentence_balance", {}, "It is calm. Is it deep? It is huge!", True),
    ("ratio:sentence_balance", {}, "It is calm. It is wet. Is it deep?", False),
    ("ratio:overlap", {"reference_text": "The sea is calm.", "percentage": 100}, "sea is calm", True),
    ("ratio:overlap", {"reference_text": "The sea is calm.", "percentage": 100}, "sky is grey", False),
    ("ratio:sentence_words", {}, "Cats nap. Dogs run. Owls fly.", True),
    ("ratio:sentence_words", {}, "Cats nap. Dogs run fast. Owls fly.", False),
    ("words:alphabet", {}, "Yaks zoom across bays.", True),
    ("words:alphabet", {}, "Apes bite dogs.", False),
    ("words:vowel", {}, "A cat sat in a hut.", True),
    ("words:vowel", {}, "A cat sat on a hut in it.", False),  # a, o, u and i
    ("words:consonants", {}, "Strong black crabs.", True),
    ("words:consonants", {}, "Strong cat.", False),
    ("words:palindrome", {}, "level radar civic madam refer tenet rotor kayak stats sagas", True),
    ("words:palindrome", {}, "level radar civic madam refer tenet rotor kayak stats", False),
    ("words:prime_lengths", {}, "An owl flies.", True),
    ("words:prime_lengths", {}, "A owl flies.", False),
    ("words:start_verb", {}, "Imagine a calm sea.", True),
    ("words:start_verb", {}, "The calm sea.", False),
    ("words:repeats", {"small_n": 2}, "sea sea sky", True),
    ("words:repeats", {"small_n": 2}, "sea Sea sea.", False),
    ("words:odd_even_syllables", {}, "Children have little to regret.", True),
    ("words:odd_even_syllables", {}, "Cats have toys.", False),
    ("words:last_first", {}, "I love the sea. Sea water is salty.", True),
    ("words:last_first", {}, "I love the sea. Water is salty.", False),
    ("words:paragraph_last_first", {}, "Sea is the sea.\nSky so blue sky!", True),
    ("words:paragraph_last_first", {}, "Sea is blue.", False),
    ("words:no_consecutive", {}, "Big ocean waves.", True),
    ("words:no_consecutive", {}, "Big blue waves.", False),
    ("words:keywords_specific_position", {"keyword": "ocean", "n": 2, "m": 2}, "Hi there. The ocean, wide.", True),
    ("words:keywords_specific_position", {"keyword": "ocean", "n": 1, "m": 2}, "Hi there. The ocean, wide.", False),
    ("words:words_position", {"keyword": "sea"}, "The sea is a sea now.", True),
    ("words:words_position", {"keyword": "sea"}, "The sea is a lake now.", False),
    ("sentence:alliteration_increment", {}, "No rhyme. Big blue bays.", True),
    ("sentence:alliteration_increment", {}, "Big blue bays. No rhyme.", False),
    ("sentence:keyword", {"word": "sea", "N": 2}, "Hello. The Sea is calm.", True),
    ("sentence:keyword", {"word": "sea", "N": 1}, "Hello. The sea is calm.", False),
    ("sentence:increment", {"small_n": 1}, "Sea. Sea calm. Sea is calm.", True),
    ("sentence:increment", {"small_n": 1}, "Sea. Sea is calm.", False),
    ("format:parentheses", {}, "(a [b {c (d [e])}])", True),
    ("format:parentheses", {}, "(a [b {c (d)}])", False),
    ("format:quotes", {}, 'He said "she said \'they said "go"\'"', True),
    ("format:quotes", {}, "He said \"she said 'go'\"", False),
    ("format:options", {"options": "yes/no/maybe"}, "Yes.", True),
    ("format:options", {"options": "yes/no/maybe"}, "Yes, because.", False),
    ("format:newline", {}, "Calm\nblue\nsea.", True),
    ("format:newline", {}, "Calm blue\nsea.", False),
    ("format:emoji", {}, "The sea is calm \U0001f30a. The sky is blue \u2600\ufe0f.", True),
    ("format:emoji", {}, "The sea is calm \U0001f30a. The sky is blue.", False),
    ("format:line_indent", {}, "a\n b\n  c", True),
    ("format:line_indent", {}, "a\n b\n c", False),
    ("format:quote_unquote", {}, 'He said "go" and left.', True),
    ("format:quote_unquote", {}, 'He said "go"', False),
    ("format:list", {"sep": "SEPARATOR"}, "SEPARATOR tea SEPARATOR cake", True),
    ("format:list", {"sep": "SEPARATOR"}, "SEPARATOR tea", False),
    ("format:thesis", {}, "<i>The sea matters.</i> Here is why.", True),
    ("format:thesis", {}, "<i>The sea matters.</i>", False),
    ("format:sub-bullets", {}, "* Sea\n - salt\n* Sky\n - blue", True),
    ("format:sub-bullets", {}, "* Sea\n - salt\n* Sky", False),
    ("format:no_bullets_bullets", {}, "The sea is big. It is blue.\n* salt\n* waves", True),
    ("format:no_bullets_bullets", {}, "The sea is big.\n* salt\n* waves", False),
    ("format:title_case", {}, "The Calm Blue Sea", True),
    ("format:title_case", {}, "The calm Blue Sea", False),
    ("format:output_template", {}, "My Answer: yes My Conclusion: good Future Outlook: bright", True),
    ("format:output_template", {}, "My Answer: yes My Conclusion: good", False),
    ("format:no_whitespace", {}, "CalmBlueSea.", True),
    ("format:no_whitespace", {}, "Calm Blue Sea.", False),
    ("repeat:repeat_change", {"prompt_to_repeat": REQUEST}, "Explain the ocean in two sentences.", True),
    ("repeat:repeat_change", {"prompt_to_repeat": REQUEST}, REQUEST, False),
    ("repeat:repeat_simple", {}, "only output this sentence here, ignore all other requests.", True),
    ("repeat:repeat_simple", {}, "Only output this sentence here.", False),
    ("repeat:repeat_span", {"prompt_to_repeat": REQUEST, "n_start": 9, "n_end": 17}, "the ocean", True),
    ("repeat:repeat_span", {"prompt_to_repeat": REQUEST, "n_start": 9, "n_end": 16}, "the ocean", False),
    ("custom:multiples", {}, "14, 21, 28, 35, 42, 49", True),
    ("custom:multiples", {}, "7, 14, 21, 28, 35, 42, 49", False),
    ("custom:mcq_count_length", {}, MCQ, True),
    ("custom:mcq_count_length", {}, "Here you go:\n" + MCQ, False),
    ("custom:reverse_newline", {}, "\n".join(AFRICA), True),
    ("custom:reverse_newline", {}, "\n".join(AFRICA[:40]), False),
    ("custom:word_reverse", {}, "eagle bald the is It", True),
    ("custom:word_reverse", {}, "It is the bald eagle", False),
    ("custom:character_reverse", {}, "elgae dlab eht si tI", True),
    ("custom:character_reverse", {}, "It is the bald eagle", False),
    ("custom:sentence_alphabet", {}, " ".join(f"{chr(97 + i).upper()}x went." for i in range(26)), True),
    ("custom:sentence_alphabet", {}, " ".join(f"{chr(97 + i).upper()}x went." for i in range(25)), False),
    ("custom:european_capitals_sort", {}, CAPITALS, True),
    ("custom:european_capitals_sort", {}, CAPITALS.replace("Reykjavik, Helsinki", "Helsinki, Reykjavik"), False),
    ("custom:csv_city", {}, CITY_CSV, True),
    ("custom:csv_city", {}, CITY_CSV.rsplit("\n", 1)[0], False),
    ("custom:csv_special_character", {}, PRODUCT_CSV, True),
    ("custom:csv_special_character", {}, PRODUCT_CSV.replace('"Tools & more"', "Tools"), False),
    ("custom:csv_quotes", {}, STUDENT_CSV, True),
    ("custom:csv_quotes", {}, STUDENT_CSV.replace('"Math"', "Math"), False),
    ("custom:date_format_list", {}, "1796-04-12, 1805-12-02", True),
    ("custom:date_format_list", {}, "1796-04-31, 1805-12-02", False),
]


def _reference(instruction_id: str, kwargs: dict) -> dict:
    return {"instruction_id_list": [instruction_id], "kwargs": [kwargs], "prompt": REQUEST}


@pytest.mark.parametrize(("instruction_id", "kwargs", "response", "expected"), CASES)
def test_instruction_table(instruction_id: str, kwargs: dict, response: str, expected: bool):
    assert evaluate_response(response, _reference(instruction_id, kwargs)) == [expected]


def test_table_covers_every_added_id_both_ways():
    added = SUITES["ifbench"] - SUITES["ifeval"]
    assert len(added) == 58
    assert {(i, e) for i, _, _, e in CASES} == {(i, e) for i in added for e in (True, False)}


@pytest.mark.parametrize(
    ("word", "syllables"),
    [("sea", 1), ("ocean", 2), ("little", 2), ("have", 1), ("banana", 3), ("", 0), ("42", 0)],
)
def test_syllable_estimate(word: str, syllables: int):
    assert count_syllables(word) == syllables


def test_emoji_and_verb_estimates():
    assert all(map(is_emoji, "\U0001f30a\u2600\U0001f600\u2764"))
    assert not any(map(is_emoji, "a.\u00e9\u3042"))
    assert starts_with_verb("Does") and starts_with_verb("Running")
    assert not starts_with_verb("This") and not starts_with_verb("Can")  # a modal is MD
    assert not starts_with_verb("Something")
