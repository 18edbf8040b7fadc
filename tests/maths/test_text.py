"""Text helpers (evaluators/maths/text.py): numbers, keywords, tokens and the seed-003 phrase list."""
from __future__ import annotations

import pytest

from evaluators.maths import text as txt


def kw_texts(text: str) -> list[str]:
    return [k.text for k in txt.keywords(text)]


def test_normalize_lowercases_strips_and_collapses_whitespace():
    assert txt.normalize("  Territory \t 118\n\nHAS ") == "territory 118 has"


@pytest.mark.parametrize("text, expected", [
    ("$604", {604.0}),
    ("0.305%", {0.305}),
    ("a change of -0.133%", {-0.133}),
    ("6,650 policies", {6650.0}),
    ("10,000,000.5", {10000000.5}),
    ("Rule C-1", {1.0}),              # a hyphen after a letter is not a sign
    ("ranges 5-10", {5.0, 10.0}),     # nor after a digit
    ("(-3) and −2", {-3.0, -2.0}),    # real minus signs (ASCII and U+2212)
    ("base rate 293 times 2.061", {293.0, 2.061}),
    ("1,2345", {1.0, 2345.0}),        # not a thousands group
    ("H2O and Q3", set()),            # digits glued to letters
    ("5km and 3rd", {5.0, 3.0}),      # trailing units are fine
    (".5 and x.5 and 1.2.3", {0.5, 1.2}),  # a bare ".5", but not a dot glued to a word or number
    ("-$5 and $-7", {-5.0, -7.0}),          # a sign before or after the currency
    ("version .5.3 of 2", {2.0}),           # a version after a bare dot is no number (it crashed the metrics)
    ("0,305", {0.0, 305.0}),                # not a thousands group (leading 0)
    ("no digits here", set()),
])
def test_numbers(text, expected):
    assert txt.numbers(text) == frozenset(expected)


def test_keywords_of_seed_004_example():
    kws = txt.keywords("Territory 118 has a rate change of 0.305%")
    # phrases first, then numbers, then words; each in order of appearance
    assert [(k.text, k.kind, k.value) for k in kws] == [
        ("territory 118", "phrase", None), ("0.305%", "number", 0.305), ("rate", "word", None),
        ("change", "word", None),
    ]


def test_keywords_what_is_and_is_not_a_keyword():
    # sentence-initial "The" is stripped from the phrase; the number in "Rule C-1" belongs to it
    assert kw_texts("The Rule C-1 applies") == ["rule c-1", "applies"]
    # stop words and words under 4 letters are not keywords; numbers of any length are
    assert kw_texts("it is in the box with 293 of them") == ["293"]
    assert kw_texts("The premium is $604") == ["$604", "premium"]
    # stop words split a capitalised run, so an all-caps sentence is not one phrase
    assert kw_texts("TERRITORY 118 HAS A RATE CHANGE OF 0.305%") == ["territory 118", "rate change", "0.305%"]
    # a possessive is dropped; a leading number is a number, not part of the name
    assert kw_texts("In 2020 John Curgenven's boat") == ["john curgenven", "2020", "boat"]
    # a "-" right after a phrase is a hyphen, not a sign; a possessive word loses its "'s"
    assert kw_texts("Territory 118-120 and the county's filing") == ["territory 118", "120", "county", "filing"]
    # de-duplicated: text case-insensitively, numbers by value
    assert kw_texts("Cornwall heath, cornwall HEATH, $604 and 604") == ["cornwall", "heath", "$604"]
    assert txt.keywords("") == () and txt.keywords("It is what it is.") == ()


def test_tokens_are_lowercase_alphanumeric_runs():
    assert txt.tokens("The Cat's 2 mats, Zürich!") == ("the", "cat", "s", "2", "mats", "z", "rich")
    assert txt.tokens("The Cat's 2 mats, Zurich!") == ("the", "cat", "s", "2", "mats", "zurich")  # ASCII path
    assert txt.tokens("C-1: 0.305% (Table 3)") == ("c", "1", "0", "305", "table", "3")


def test_seed_003_phrase_list_has_12_phrases():
    assert len(txt.UNCERTAINTY_PHRASES) == 12


@pytest.mark.parametrize("text", [
    "", " ", "a", "Already single spaced.", " lead", "trail ", "two  spaces", "tab\there", "new\nline",
    "nbsp\u00a0here", "ideographic\u3000space", "line\u2028separator", "unit\x1fseparator", "next\x85line",
    "zero\u200bwidth", "ÉCOLE  Normale", "İstanbul", "\t\n",
])
def test_normalize_fast_path_equals_split_and_join(text):
    # single-spaced printable text skips split + join: the result must not change
    assert txt.normalize(text) == " ".join(text.lower().split())


@pytest.mark.parametrize("keyword, answer, found", [
    ("Rate", "The rate is set.", True), ("Rate", "(rate)", True), ("Rate", "RATE-change", True),
    ("Rate", "rate’s", True), ("Rate", "rates", False), ("Rate", "prorate", False), ("Rate", "rate_change", False),
    ("Rate", "rate2", False), ("Rate", "2rate", False), ("Rate", "la rate, café", True), ("Rate", "ratée", False),
    ("Café", "Le café est prêt.", True), ("Café", "(CAFÉ-crème)", True), ("Café", "café’s", True),
    ("Café", "cafés", False), ("Café", "décafé", False), ("Café", "café_bar", False), ("Café", "café2", False),
])
def test_keyword_coverage_word_boundaries_ascii_and_unicode(keyword, answer, found):
    # one substring test on the answer with its non-word characters made spaces (ASCII and regex paths)
    assert txt.keyword_coverage_counts(keyword, answer)[0] == int(found)
