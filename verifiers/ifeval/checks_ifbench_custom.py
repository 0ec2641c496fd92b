"""IFBench's eleven task-specific checkers (``custom:*``): each belongs to one fixed prompt.

The prompt is part of the instruction (multiples of 7 from 10 to 50, Africa's countries in
reverse order, Napoleon's battle dates ...), so these take no arguments. Semantics follow
allenai/IFBench's ``instructions.py``; a response that would make IFBench's code raise
(an empty CSV field where it reads the first character) is a failed instruction here.
"""

from __future__ import annotations

import csv
import io
import re
import string
import unicodedata
from collections.abc import Callable

from verifiers.ifeval.text import split_sentences
from verifiers.ifeval.wordlists import EUROPEAN_CAPITALS_BY_LATITUDE

_STRIP = string.punctuation + " "
_NO_PUNCTUATION = str.maketrans("", "", string.punctuation)
_MULTIPLES = [str(n) for n in range(14, 51, 7)]
# IFBench's splitter also eats the newlines before a label; the pieces are stripped anyway,
# and without the leading "\n*" a run of newlines cannot make the split quadratic.
_QUESTION = re.compile(r"Question \d+[\.|\):;]?\s*")
_OPTION = re.compile(r"^[A-Ea-e][\.|\)]\s*\w+")
_CITY_HEADER = ["ID", "Country", "City", "Year", "Count"]
_PRODUCT_HEADER = re.compile(
    r'^(ProductID|"ProductID"),[ \t]*(Category|"Category"),[ \t]*(Brand|"Brand"),'
    r'[ \t]*(Price|"Price"),[ \t]*(Stock|"Stock")$'
)
_STUDENT_HEADER = re.compile(
    r'^(StudentID|"StudentID")\t *(Subject|"Subject")\t *(Grade|"Grade")\t *'
    r'(Semester|"Semester")\t *(Score|"Score")$'
)
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DAYS = {1: 31, 2: 29, 3: 31, 4: 30, 5: 31, 6: 30, 7: 31, 8: 31, 9: 30, 10: 31, 11: 30, 12: 31}


def _ascii(text: str) -> str:
    """Accents dropped ('São Tomé' -> 'Sao Tome'), as IFBench compares names."""
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")


def _csv_rows(text: str, delimiter: str = ",") -> list[list[str]] | None:
    try:
        return list(csv.reader(io.StringIO(text), delimiter=delimiter))
    except csv.Error:  # a NUL byte or a field past csv's size limit: not valid CSV
        return None


def _quoted_special(field: str) -> bool:
    """``re.match(r'".*[^\\d\\w\\s].*"', field)`` in linear time: the field opens with a
    quote and, on its first line, a character that is not a letter, digit or space comes
    before a later quote."""
    line = field.split("\n", 1)[0]
    close = line.rfind('"')
    special = (ch for ch in line[1:close] if not (ch.isalnum() or ch == "_" or ch.isspace()))
    return line.startswith('"') and close > 1 and any(True for _ in special)


def multiples(response: str) -> bool:
    """custom:multiples: the numbers written are exactly 14, 21, 28, 35, 42, 49."""
    return re.findall(r"\d+", response.replace(",", ", ")) == _MULTIPLES


def _question_length(question: str) -> int | None:
    """Length of a question's text, or None unless it has exactly five options."""
    text, options, in_options = "", 0, False
    for line in question.split("\n"):
        if _OPTION.match(line.strip()):
            options, in_options = options + 1, True
        elif not in_options:
            text += " " + line.strip()
    return len(text.strip()) if options == 5 else None


def mcq_count_length(response: str) -> bool:
    """custom:mcq_count_length: nothing before "Question", four questions of five options
    each, every question longer than the one before."""
    if not response.startswith("Question"):
        return False
    parts = _QUESTION.split(response)
    questions = [q.strip() for q in (parts[1:] if parts[0] == "" else parts) if q.strip()]
    if len(questions) != 4:
        return False
    lengths = [_question_length(q) for q in questions]
    if None in lengths:
        return False
    return all(a < b for a, b in zip(lengths, lengths[1:], strict=False))  # type: ignore[operator]


def reverse_newline(response: str) -> bool:
    """custom:reverse_newline: from the line naming Zimbabwe on, 52 or more lines in reverse
    alphabetical order (accents ignored)."""
    lines = [line.strip(_STRIP) for line in response.split("\n")]
    lines = [line for line in lines if line]
    start = next((i for i, line in enumerate(lines) if "Zimbabwe" in line), None)
    if start is None or len(lines) - start < 52:
        return False
    names = [_ascii(line) for line in lines[start:]]
    return names == sorted(names, reverse=True)


def word_reverse(response: str) -> bool:
    """custom:word_reverse: read backwards word by word, the answer says "bald eagle"."""
    text = response.lower().strip().translate(_NO_PUNCTUATION)
    backwards = " ".join(text.split()[::-1])
    return "bald eagle" in backwards and backwards in split_sentences(backwards)


def character_reverse(response: str) -> bool:
    """custom:character_reverse: "bald eagle" written backwards letter by letter."""
    return "elgae dlab" in response.lower()


def sentence_alphabet(response: str) -> bool:
    """custom:sentence_alphabet: 26 sentences whose first words start with a, b, ... z."""
    sentences = split_sentences(response)
    if len(sentences) != 26:
        return False
    for letter, sentence in zip(string.ascii_lowercase, sentences, strict=True):
        words = sentence.split()
        if not words or words[0][0].lower() != letter:
            return False
    return True


def european_capitals_sort(response: str) -> bool:
    """custom:european_capitals_sort: the 27 capitals north of 45 degrees, comma-separated,
    northernmost first."""
    names = [name.strip() for name in _ascii(response).split(",") if name.strip()]
    return names == list(EUROPEAN_CAPITALS_BY_LATITUDE)


def csv_city(response: str) -> bool:
    """custom:csv_city: a header ID,Country,City,Year,Count and seven 5-field rows."""
    rows = _csv_rows(response)
    if rows is None or len(rows) != 8 or rows[0] != _CITY_HEADER:
        return False
    return all(len(row) == 5 for row in rows[1:])


def csv_special_character(response: str) -> bool:
    """custom:csv_special_character: the product header, 14 rows of 5 fields, and a quoted
    field holding a special character (IFBench stops at the first such row)."""
    if not _PRODUCT_HEADER.match(response.split("\n")[0].strip()):
        return False
    rows = _csv_rows(response.replace('"', '"""'))
    if rows is None or len(rows) != 15:
        return False
    for row in rows[1:]:
        if len(row) != 5:
            return False
        if any(_quoted_special(field) for field in row):
            return True
    return False


def csv_quotes(response: str) -> bool:
    """custom:csv_quotes: the student header and three rows, tab-separated, every field in
    double quotes."""
    if not _STUDENT_HEADER.match(response.split("\n")[0].strip()):
        return False
    rows = _csv_rows(response.replace('"', '"""'), delimiter="\t")
    if rows is None or len(rows) != 4:
        return False
    for row in rows:
        fields = [field.strip() for field in row]
        if len(row) != 5 or not all(f and f[0] == '"' and f[-1] == '"' for f in fields):
            return False
    return True


def date_format_list(response: str) -> bool:
    """custom:date_format_list: comma-separated YYYY-MM-DD dates from 1769 to 1821 with
    possible months and days."""
    for date in response.strip().split(","):
        date = date.strip()
        if not _DATE.match(date):
            return False
        year, month, day = (int(part) for part in date.split("-"))
        if not 1769 <= year <= 1821 or month > 12:
            return False
        if month in _DAYS and day > _DAYS[month]:
            return False
    return True


IFBENCH_CUSTOM_CHECKS: dict[str, Callable[..., bool]] = {
    "custom:multiples": multiples,
    "custom:mcq_count_length": mcq_count_length,
    "custom:reverse_newline": reverse_newline,
    "custom:word_reverse": word_reverse,
    "custom:character_reverse": character_reverse,
    "custom:sentence_alphabet": sentence_alphabet,
    "custom:european_capitals_sort": european_capitals_sort,
    "custom:csv_city": csv_city,
    "custom:csv_special_character": csv_special_character,
    "custom:csv_quotes": csv_quotes,
    "custom:date_format_list": date_format_list,
}
