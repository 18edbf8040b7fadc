"""Lexical metrics (evaluators/metrics/lexical.py): seed 004's worked examples and the edge cases."""
from __future__ import annotations

import json

import pytest

from evaluators.maths import text as txt
from evaluators.metrics import REGISTRY
from evaluators.records import NOT_APPLICABLE, OK, SKIPPED, GoldenItem, RagOutput, Sample

LEXICAL = ("exact_match", "keyword_coverage", "number_match", "answer_completeness",
           "citation_quality", "checks_pass_rate", "rouge_l", "dont_know")


def sample(answer: str, reference: str = "", checks: tuple = (), qid: str = "q1") -> Sample:
    return Sample(GoldenItem(qid, "question?", reference, checks=checks), RagOutput(qid, "local_search", answer))


def score(metric_id: str, answer: str, reference: str = "", checks: tuple = ()):
    (result,) = REGISTRY[metric_id].scored([sample(answer, reference, checks)], None)
    return result


def value(metric_id: str, answer: str, reference: str = "", checks: tuple = ()) -> float:
    result = score(metric_id, answer, reference, checks)
    assert result.status == OK, result
    return result.value


def kw_texts(text: str) -> list[str]:
    return [k.text for k in txt.keywords(text)]


# -- registration ------------------------------------------------------------------------------------

def test_every_lexical_metric_is_registered_with_its_declaration():
    for mid in LEXICAL:
        m = REGISTRY[mid]
        assert m.family == "lexical"
        assert m.formula
    assert {mid: REGISTRY[mid].scale for mid in LEXICAL} == {
        "exact_match": "binary", "keyword_coverage": "ratio", "number_match": "ratio",
        "answer_completeness": "ratio", "citation_quality": "ratio", "checks_pass_rate": "ratio",
        "rouge_l": "ratio", "dont_know": "binary",
    }
    assert REGISTRY["dont_know"].higher_is_better is None
    assert all(REGISTRY[mid].higher_is_better is True for mid in LEXICAL if mid != "dont_know")
    assert REGISTRY["checks_pass_rate"].needs == ("checks",)
    assert REGISTRY["citation_quality"].needs == () and REGISTRY["dont_know"].needs == ()
    for mid in ("exact_match", "keyword_coverage", "number_match", "answer_completeness", "rouge_l"):
        assert REGISTRY[mid].needs == ("reference",)
    assert REGISTRY["rouge_l"].seed == "003" and REGISTRY["dont_know"].seed == "003"
    assert REGISTRY["exact_match"].seed == "004"
    assert "LCS" in REGISTRY["rouge_l"].formula and "no stemming" in REGISTRY["rouge_l"].formula


def test_one_result_per_sample_in_order():
    batch = [sample("Territory 118", "Territory 118", qid="a"), sample("no", "Territory 118", qid="b"),
             sample("Territory 118", "", qid="c")]
    results = REGISTRY["exact_match"].scored(batch, None)
    assert [(r.status, r.value) for r in results] == [(OK, 1.0), (OK, 0.0), (NOT_APPLICABLE, None)]


# -- exact_match ---------------------------------------------------------------------------------------

def test_exact_match_ignores_case_and_whitespace_only():
    assert value("exact_match", "  TERRITORY   118\n", "Territory 118") == 1.0
    assert value("exact_match", "Territory 118.", "Territory 118") == 0.0
    assert value("exact_match", "", "Territory 118") == 0.0
    assert score("exact_match", "anything", "   ").status == NOT_APPLICABLE


# -- keyword_coverage ------------------------------------------------------------------------------------

def test_keyword_coverage_seed_004_example():
    ref, gen = "Territory 118 has a rate change of 0.305%", "The rate change for Territory 118 is 0.305%"
    assert value("keyword_coverage", gen, ref) == 1.0


def test_keyword_coverage_partial_and_word_boundaries():
    ref = "Territory 118 has a rate change of 0.305%"  # 4 keywords
    r = score("keyword_coverage", "Territory 1180 has a rates change of 0.3050 %", ref)
    # "territory 118" not on a word boundary, "rate" only inside "rates"; 0.3050 == 0.305 by value
    assert r.value == 0.5
    assert r.detail == "2/4 reference keywords found; missing: territory 118, rate"


def test_keyword_coverage_not_applicable_without_keywords():
    r = score("keyword_coverage", "whatever", "It is what it is.")
    assert r.status == NOT_APPLICABLE and r.detail == "no keywords in the reference"
    assert score("keyword_coverage", "whatever", "").status == NOT_APPLICABLE


# -- number_match ------------------------------------------------------------------------------------------

def test_number_match_seed_004_examples():
    assert value("number_match", "The rate change for Territory 118 is 0.305%",
                 "Territory 118 has a rate change of 0.305%") == 1.0
    assert value("number_match", "The premium is $604", "$604") == 1.0


def test_number_match_partial_sign_and_not_applicable():
    r = score("number_match", "It is 604 from 293", "293 x 2.061 = $604")
    assert r.value == pytest.approx(2 / 3) and r.detail == "2/3 reference numbers found; missing: 2.061"
    assert value("number_match", "a change of 0.133%", "a change of -0.133%") == 0.0
    assert value("number_match", "Rule C-1 applies", "Rule C-1") == 1.0
    r = score("number_match", "604", "no numbers here")
    assert r.status == NOT_APPLICABLE and r.detail == "no numbers in the reference"


# -- answer_completeness -----------------------------------------------------------------------------------

def test_answer_completeness_hand_computed():
    # reference: 8 words, keywords territory 118 / rate / change / 0.305%
    # answer: 5 words -> length 5/8 = 0.625; keywords 3/4 = 0.75 ("change" missing) -> 0.6875
    r = score("answer_completeness", "Territory 118 rate is 0.305%", "Territory 118 has a rate change of 0.305%")
    assert r.value == 0.6875
    assert r.detail == "length 5/8 words -> 0.625; keywords 3/4 -> 0.750"
    # longer than the reference caps the length score at 1
    assert value("answer_completeness", "Territory 118 has a rate change of 0.305% as of 2024 says the filing",
                 "Territory 118 has a rate change of 0.305%") == 1.0


def test_answer_completeness_without_keywords_uses_length_alone():
    r = score("answer_completeness", "It is", "It is what it is.")
    assert r.value == 0.4
    assert "no keywords in the reference" in r.detail
    assert score("answer_completeness", "x", " ").status == NOT_APPLICABLE


# -- citation_quality ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("answer, expected, found", [
    ("The premium is $604.", 0.0, None),
    ("According to the filing, the premium is $604.", 1 / 3, "found: according to"),
    ("According to page 4, the premium is $604.", 2 / 3, "found: page, according to"),
    ("According to page 4 of the rate document, the premium is $604.", 1.0,
     "found: page, document, according to"),
    ("Source: Table: page 2 of the PDF, based on data from the document", 1.0,
     "found: source:, table:, page, document, pdf, based on, from"),
])
def test_citation_quality_scores(answer, expected, found):
    r = score("citation_quality", answer)
    assert r.value == expected
    assert r.detail == (found or "no source indicators")


def test_citation_quality_counts_distinct_indicators_on_word_boundaries():
    assert value("citation_quality", "page 4 and page 5 and pages 6-7") == 1 / 3
    assert value("citation_quality", "a webpage about fromage, a table of rates") == 0.0


# -- checks_pass_rate ---------------------------------------------------------------------------------------

ANSWER = "Yes. Territory 118 has a rate change of -0.133%; the premium is $6,650. Rules: Rule C-1, Rule C-2."


def test_checks_pass_rate_value_and_detail():
    checks = (
        {"type": "contains", "value": "Territory 118", "name": "has_territory_118"},
        {"type": "number", "value": 604},
        {"type": "not_contains", "value": "cannot"},
    )
    r = score("checks_pass_rate", ANSWER, "ref", checks)
    assert r.value == pytest.approx(2 / 3)
    assert json.loads(r.detail) == [
        {"name": "has_territory_118", "type": "contains", "passed": True},
        {"name": "number 604", "type": "number", "passed": False},
        {"name": "not_contains 'cannot'", "type": "not_contains", "passed": True},
    ]


def test_checks_pass_rate_not_applicable_and_malformed():
    r = score("checks_pass_rate", ANSWER, "ref", ())
    assert r.status == NOT_APPLICABLE and r.detail == "no checks for this question"
    r = score("checks_pass_rate", ANSWER, "ref", ({"type": "regex", "pattern": "("},))
    assert r.status == SKIPPED and r.value is None and r.detail.startswith("malformed checks: check 1:")


# -- rouge_l ----------------------------------------------------------------------------------------------

def test_rouge_l_hand_computed():
    # LCS("the cat on the mat", "the cat sat on the mat") = 5; P = 5/5, R = 5/6, F1 = 2PR/(P+R) = 10/11
    assert value("rouge_l", "the cat on the mat", "the cat sat on the mat") == pytest.approx(10 / 11, abs=1e-15)
    # case and punctuation are not tokens: identical token lists -> 1
    assert value("rouge_l", "The CAT, sat!", "the cat sat") == 1.0
    # order matters: LCS("b a", "a b") = 1 -> P = R = 1/2 -> F1 = 1/2
    assert value("rouge_l", "b a", "a b") == 0.5


def test_rouge_l_edges():
    assert value("rouge_l", "", "the cat sat") == 0.0
    assert value("rouge_l", "dog", "the cat sat") == 0.0
    r = score("rouge_l", "東京", "東京")
    assert r.status == NOT_APPLICABLE and r.detail == "the reference has no [a-z0-9] tokens"
    assert score("rouge_l", "x", "").status == NOT_APPLICABLE


# -- dont_know -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("phrase", txt.UNCERTAINTY_PHRASES)
def test_dont_know_each_uncertainty_phrase(phrase):
    answer = f"Sorry, {phrase.upper()} from the context given."
    assert txt.is_dont_know(answer) == phrase
    r = score("dont_know", answer)
    assert r.value == 1.0 and r.detail == f"matched {phrase!r}"


@pytest.mark.parametrize("answer, phrase", [
    ("N/A", "n/a"), ("None.", "none"), ("null", "null"), ("Unknown", "unknown"),
    ("", "(empty answer)"), ("  \n ", "(empty answer)"),
    ("I don\u2019t know.", "i don't know"),  # typographic apostrophe
])
def test_dont_know_short_empty_and_curly(answer, phrase):
    assert txt.is_dont_know(answer) == phrase
    assert value("dont_know", answer) == 1.0


@pytest.mark.parametrize("answer", [
    "The heath is the Cornish heath (Erica vagans).",
    "None of the listed rules apply to Territory 118.",  # "none" only counts in a short answer
    "The results are stored in the no database mode.",    # "no data" on a word boundary only
    "nonempty",                                            # short, but "none" is not a word here
])
def test_dont_know_normal_answers(answer):
    assert txt.is_dont_know(answer) is None
    r = score("dont_know", answer)
    assert r.value == 0.0 and r.detail is None


# -- a few more edges ------------------------------------------------------------------------------------

def test_keywords_unicode_and_one_word_phrases():
    assert kw_texts("Émile Zola wrote Germinal") == ["émile zola", "germinal", "wrote"]
    # a sentence-initial capitalised word is a one-word phrase, kept at any length
    assert kw_texts("Yes, it is.") == ["yes"]
    assert value("keyword_coverage", "yes", "Yes, it is.") == 1.0
    assert isinstance(txt.numbers("604"), frozenset)


def test_checks_detail_is_valid_json_for_awkward_names():
    checks = ({"type": "contains", "value": "yes", "name": 'says "yes" – naïvely\\'},)
    r = score("checks_pass_rate", "Yes.", "ref", checks)
    assert r.value == 1.0
    assert json.loads(r.detail) == [{"name": 'says "yes" – naïvely\\', "type": "contains", "passed": True}]


def test_checks_shared_by_several_methods_are_validated_for_each_sample():
    good = ({"type": "number", "value": 604},)
    bad = ({"type": "number", "value": "604"},)
    golden_good, golden_bad = GoldenItem("g", "q?", "r", checks=good), GoldenItem("b", "q?", "r", checks=bad)
    batch = [Sample(golden_good, RagOutput("g", m, a)) for m, a in (("x", "$604"), ("y", "605"))]
    batch += [Sample(golden_bad, RagOutput("b", m, "604")) for m in ("x", "y")]
    results = REGISTRY["checks_pass_rate"].scored(batch, None)
    assert [(r.status, r.value) for r in results] == [(OK, 1.0), (OK, 0.0), (SKIPPED, None), (SKIPPED, None)]
    assert results[2].detail == results[3].detail == (
        "malformed checks: check 1: 'value' of a number check must be a finite number, got str '604' "
        "(write it without $, % or quotes)")


def test_checks_are_prepared_once_per_tuple_and_never_mixed_up():
    # prepared checks are kept by the identity of their tuple, across batches: a new tuple (which
    # may get a freed tuple's id) must be validated and rendered anew
    for i in range(50):
        checks = ({"type": "contains", "value": f"word{i}"},) if i % 2 else ({"type": "number", "value": "x"},)
        batch = [sample("has word1 word3", "ref", checks, qid=f"q{i}")]
        for _ in range(2):  # two batches: the second finds the prepared checks
            r = REGISTRY["checks_pass_rate"].scored(batch, None)[0]
            if i % 2:
                assert json.loads(r.detail) == [{"name": f"contains 'word{i}'", "type": "contains",
                                                 "passed": i in (1, 3)}]
            else:
                assert r.status == SKIPPED and r.detail.startswith("malformed checks: check 1: 'value'")
        del checks, batch


def test_results_do_not_depend_on_cache_state():
    batch = [sample("The rate change for Territory 118 is 0.305%, see page 3", "Territory 118 has a rate "
                    "change of 0.305%", qid=str(i)) for i in range(3)]
    txt.clear_caches()
    cold = {mid: REGISTRY[mid].scored(batch, None) for mid in LEXICAL}
    warm = {mid: REGISTRY[mid].scored(batch, None) for mid in LEXICAL}
    assert cold == warm
    assert cold["answer_completeness"][0].value == 1.0
    assert cold["citation_quality"][0].value == 1 / 3
