"""Unit tests of evaluators.maths.formulas: every worked example of the seeds, then the edge cases.

Seed numbers refer to shared/seeds/00N_*.txt. Where a seed prints a rounded number, the test
checks both the rounded value the seed shows and the unrounded value behind it.
"""
from __future__ import annotations

import ast
import inspect
import math
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from evaluators.maths import formulas as f
from evaluators.maths.formulas import (
    NO_CLAIMS_TO_VERIFY,
    NO_CONTEXT_FOR_PRECISION,
    NO_CONTEXT_FOR_RECALL,
    NO_CONTEXT_TO_VERIFY,
    NO_FACTS_TO_RECALL,
    RAGAS_WEIGHTS,
    WHITE_PAPER_WEIGHTS,
    Scored,
    accuracy_grade,
    answer_class_value,
    average_precision,
    claim_f1,
    completeness,
    context_precision_mean,
    context_recall,
    f1_from_precision_recall,
    factual_accuracy,
    faithfulness,
    grade_value,
    half_up,
    hallucination_rate,
    mean_cosine,
    ragas_composite,
    ratio,
    scale_to_likert,
    semantic_similarity_percent,
    verdict,
    verdict_value,
    white_paper_overall,
    wp_faithfulness,
    wp_precision,
    wp_recall,
)

NAN = float("nan")
TIGHT = dict(rel=1e-12, abs=1e-12)


def is_nan(x) -> bool:
    return isinstance(x, float) and math.isnan(x)


# =========================================================================== seed 000: white paper

class TestWhitePaperCaseStudy:
    """Seed 000 section 6: 'Do you think this kind of technology is exciting or concerning?'"""

    def test_faithfulness_2_of_2_projects_to_5(self):
        scored = wp_faithfulness(2, 2, has_context=True)
        assert scored == Scored(1.0, None)
        assert scale_to_likert(scored.value) == 5.0

    def test_precision_2_of_3_projects_to_3_7(self):
        scored = wp_precision(2, 3)
        assert scored.warning is None
        assert scored.value == pytest.approx(2 / 3, **TIGHT)
        assert round(scored.value, 2) == 0.67  # the seed's "0.67"
        likert = scale_to_likert(scored.value)
        assert likert == pytest.approx(11 / 3, **TIGHT)  # 1 + 4 * 2/3 = 3.666...
        assert round(likert, 2) == 3.67
        assert round(likert, 1) == 3.7  # the seed's table value

    def test_recall_2_of_2_projects_to_5(self):
        scored = wp_recall(2, 2, has_context=True)
        assert scored == Scored(1.0, None)
        assert scale_to_likert(scored.value) == 5.0

    def test_overall_of_the_case_study(self):
        # Derived (the seed gives no overall): 0.4*3 + 0.2*5 + 0.2*(11/3) + 0.2*5 + 0*4 = 59/15.
        scores = {
            "correctness": 3.0,
            "faithfulness": scale_to_likert(wp_faithfulness(2, 2, True).value),
            "precision": scale_to_likert(wp_precision(2, 3).value),
            "recall": scale_to_likert(wp_recall(2, 2, True).value),
            "relevance": 4.0,
        }
        assert white_paper_overall(scores) == pytest.approx(59 / 15, **TIGHT)


class TestWhitePaperNoContext:
    def test_faithfulness_no_context_is_1_with_the_seed_warning(self):
        scored = wp_faithfulness(0, 2, has_context=False)
        assert scored == Scored(1.0, "No context to verify.")
        assert NO_CONTEXT_TO_VERIFY == "No context to verify."
        assert scale_to_likert(scored.value) == 5.0

    def test_faithfulness_no_context_overrides_the_ratio(self):
        # Even if the counts would give 0, seed 000 says 1.0 when context is missing.
        assert wp_faithfulness(0, 3, has_context=False).value == 1.0

    def test_precision_no_chunks_is_nan_not_applicable(self):
        value, warning = wp_precision(0, 0)
        assert is_nan(value)
        assert warning == NO_CONTEXT_FOR_PRECISION
        assert is_nan(scale_to_likert(value))

    def test_recall_no_context_is_1(self):
        scored = wp_recall(0, 2, has_context=False)
        assert scored.value == 1.0
        assert scored.warning == NO_CONTEXT_FOR_RECALL

    def test_overall_without_context_drops_precision_and_renormalises(self):
        scores = {
            "correctness": 3.0,
            "faithfulness": scale_to_likert(wp_faithfulness(0, 2, False).value),
            "precision": scale_to_likert(wp_precision(0, 0).value),
            "recall": scale_to_likert(wp_recall(0, 2, False).value),
            "relevance": 4.0,
        }
        # (0.4*3 + 0.2*5 + 0.2*5) / 0.8 = 3.2 / 0.8
        assert white_paper_overall(scores) == pytest.approx(4.0, **TIGHT)


class TestWhitePaperEdgeCases:
    def test_partial_support_has_no_warning(self):
        assert wp_faithfulness(1, 2, True) == Scored(0.5, None)
        assert wp_recall(1, 4, True) == Scored(0.25, None)
        assert wp_precision(0, 3) == Scored(0.0, None)

    def test_no_claims_with_context(self):
        assert wp_faithfulness(0, 0, True) == Scored(1.0, NO_CLAIMS_TO_VERIFY)
        assert wp_recall(0, 0, True) == Scored(1.0, NO_FACTS_TO_RECALL)

    @pytest.mark.parametrize("has_context", [True, False])
    def test_invalid_counts_raise_with_or_without_context(self, has_context):
        with pytest.raises(ValueError):
            wp_faithfulness(3, 2, has_context)
        with pytest.raises(ValueError):
            wp_recall(-1, 2, has_context)

    def test_precision_more_related_than_retrieved_raises(self):
        with pytest.raises(ValueError):
            wp_precision(4, 3)

    def test_scored_is_a_plain_named_tuple(self):
        value, warning = Scored(0.5)
        assert (value, warning) == (0.5, None)
        assert Scored._fields == ("value", "warning")


class TestWhitePaperOverall:
    def test_weights_are_the_seed_table(self):
        assert dict(WHITE_PAPER_WEIGHTS) == {
            "correctness": 0.4, "faithfulness": 0.2, "precision": 0.2, "recall": 0.2, "relevance": 0.0,
        }

    def test_each_weight(self):
        base = dict.fromkeys(WHITE_PAPER_WEIGHTS, 1.0)
        for key, weight in WHITE_PAPER_WEIGHTS.items():
            scores = dict(base, **{key: 5.0})
            assert white_paper_overall(scores) == pytest.approx(1.0 + 4.0 * weight, **TIGHT)

    def test_relevance_does_not_move_the_overall(self):
        scores = {"correctness": 4.0, "faithfulness": 2.0, "precision": 3.0, "recall": 5.0}
        assert white_paper_overall({**scores, "relevance": 1.0}) == white_paper_overall(
            {**scores, "relevance": 5.0}
        )
        assert white_paper_overall({**scores, "relevance": 1.0}) == pytest.approx(3.6, **TIGHT)

    def test_missing_keys_and_none_count_as_missing(self):
        assert white_paper_overall({"correctness": 4.0}) == 4.0
        assert white_paper_overall({"correctness": 4.0, "recall": None}) == 4.0
        # correctness 2 (w .4) and recall 5 (w .2): (0.8 + 1.0) / 0.6 = 3
        assert white_paper_overall({"correctness": 2.0, "recall": 5.0}) == pytest.approx(3.0, **TIGHT)

    def test_all_missing_is_nan(self):
        assert is_nan(white_paper_overall({}))
        assert is_nan(white_paper_overall(dict.fromkeys(WHITE_PAPER_WEIGHTS, NAN)))

    def test_only_zero_weight_component_is_nan(self):
        assert is_nan(white_paper_overall({"relevance": 4.0}))

    def test_rejects_unit_ratios_and_unknown_keys(self):
        with pytest.raises(ValueError):
            white_paper_overall({"correctness": 3.0, "faithfulness": 0.5})  # a raw ratio, not 1-5
        with pytest.raises(ValueError):
            white_paper_overall({"correctnes": 3.0})
        with pytest.raises(ValueError):
            white_paper_overall({"correctness": 3.0}, weights={"correctness": 1.0})  # incomplete

    def test_custom_weights(self):
        weights = {"correctness": 1.0, "faithfulness": 0.0, "precision": 0.0, "recall": 1.0, "relevance": 0.0}
        scores = {"correctness": 2.0, "faithfulness": 5.0, "precision": 5.0, "recall": 4.0, "relevance": 1.0}
        assert white_paper_overall(scores, weights) == pytest.approx(3.0, **TIGHT)


# =========================================================================== scales

class TestScales:
    @pytest.mark.parametrize("x, expected", [(0, 1.0), (1, 5.0), (0.5, 3.0), (0.25, 2.0), (0.75, 4.0)])
    def test_scale_to_likert(self, x, expected):
        assert scale_to_likert(x) == expected

    @pytest.mark.parametrize("missing", [None, NAN])
    def test_missing_maps_to_nan(self, missing):
        assert is_nan(scale_to_likert(missing))

    @pytest.mark.parametrize("x", [-0.1, 1.1, -1e-8, 1 + 1e-8, float("inf")])
    def test_scale_to_likert_out_of_range_raises(self, x):
        with pytest.raises(ValueError):
            scale_to_likert(x)

    def test_slack_is_clamped(self):
        assert scale_to_likert(1 + 1e-12) == 5.0
        assert scale_to_likert(-1e-12) == 1.0

    @pytest.mark.parametrize("bad", ["0.5", [0.5], True])
    def test_non_numbers_raise_type_error(self, bad):
        with pytest.raises(TypeError):
            scale_to_likert(bad)


class TestHalfUp:
    @pytest.mark.parametrize("x, digits, expected", [
        (3.25, 1, 3.3),  # Python's round gives 3.2 (half to even)
        (4.15, 1, 4.2),
        (math.fsum([4.2, 4.0, 5.0, 3.4]) / 4, 1, 4.2),  # 4.1499999... in floats
        (3.24, 1, 3.2),
        (59 / 15, 2, 3.93),  # seed 000's case study overall
        (93.72625, 2, 93.73),  # seed 003's local_search RAGAS score
    ])
    def test_values(self, x, digits, expected):
        assert half_up(x, digits) == expected


class TestRatio:
    def test_plain(self):
        assert ratio(1, 2) == 0.5
        assert ratio(3, 3) == 1.0
        assert ratio(0, 5) == 0.0

    def test_empty_whole(self):
        assert is_nan(ratio(0, 0))
        assert ratio(0, 0, when_empty=1.0) == 1.0
        assert ratio(0, 0, when_empty=0.0) == 0.0

    @pytest.mark.parametrize("part, whole", [(3, 2), (-1, 2), (1, -2), (NAN, 2), (1, NAN), (1, float("inf"))])
    def test_invalid_counts_raise(self, part, whole):
        with pytest.raises(ValueError):
            ratio(part, whole)

    def test_non_numbers_raise(self):
        with pytest.raises(TypeError):
            ratio("1", 2)
        with pytest.raises(TypeError):
            ratio(None, 2)


# =========================================================================== seed 002

class TestSeed002:
    def test_faithfulness_4_of_4(self):
        # Housing (Scotland) Act 2006: four key points, all reflected.
        assert faithfulness(4, 4) == 1

    def test_context_recall_3_of_3(self):
        # Data Protection Act 2018: claim 1 by chunk 2, claims 2 and 3 by chunk 3.
        assert context_recall(3, 3) == 1.0

    def test_context_precision_ap_maternity_leave(self):
        # Chunk 1 partially relevant -> 0, chunk 2 relevant, chunk 3 irrelevant.
        assert average_precision([0, 1, 0]) == 0.5
        assert average_precision([False, True, False]) == 0.5
        # the seed's steps: P@1 = 0, P@2 = 0.5, P@3 = 0; (0 + 0.5 + 0) / 1
        assert average_precision([0, 1, 0]) == (0 * 0 + 0.5 * 1 + 0 * 0) / 1

    def test_einstein_f1(self):
        # TP: 1879, relativity; FP: Spain, Nobel; FN: Germany.
        score = claim_f1(2, 2, 1)
        assert score == pytest.approx(2 / 3.5, **TIGHT)
        assert Fraction(score).limit_denominator(1000) == Fraction(4, 7)
        assert round(score, 2) == 0.57
        assert score == pytest.approx(0.5714285714285714, **TIGHT)

    def test_marriage_age_example_scores_zero(self):
        assert claim_f1(0, 1, 1) == 0

    def test_answer_relevance_is_the_mean_cosine(self):
        assert mean_cosine([0.9, 0.8, 0.7]) == pytest.approx(0.8, **TIGHT)
        assert mean_cosine([1.0, 0.0, -1.0]) == 0.0
        assert mean_cosine([-1.0]) == -1.0


class TestClaimF1EdgeCases:
    def test_perfect(self):
        assert claim_f1(3, 0, 0) == 1.0

    def test_no_claims_anywhere_is_nan(self):
        assert is_nan(claim_f1(0, 0, 0))

    def test_only_misses(self):
        assert claim_f1(0, 0, 2) == 0.0
        assert claim_f1(0, 3, 0) == 0.0

    def test_asymmetric_weights(self):
        # TP=1, FP=1, FN=0 -> 1 / 1.5
        assert claim_f1(1, 1, 0) == pytest.approx(2 / 3, **TIGHT)

    @pytest.mark.parametrize("args", [(-1, 0, 0), (1, -1, 0), (1, 0, NAN)])
    def test_invalid_raises(self, args):
        with pytest.raises(ValueError):
            claim_f1(*args)


class TestMeanCosineEdgeCases:
    def test_empty_is_nan(self):
        assert is_nan(mean_cosine([]))

    def test_nan_element_raises(self):
        with pytest.raises(ValueError):
            mean_cosine([0.5, NAN])

    def test_out_of_range_raises_and_float32_slack_clamps(self):
        with pytest.raises(ValueError):
            mean_cosine([1.5])
        assert mean_cosine([1 + 1e-7]) == 1.0

    def test_accepts_a_generator(self):
        assert mean_cosine(x / 10 for x in (2, 4)) == pytest.approx(0.3, **TIGHT)


# =========================================================================== seed 003

class TestFaithfulness:
    def test_no_claims_is_full_marks(self):
        # seed 003: "return 100.0  # Empty answer = no unsupported claims"
        assert faithfulness(0, 0) == 1.0
        assert faithfulness(0, 0) * 100 == 100.0

    def test_ratio(self):
        assert faithfulness(1, 4) == 0.25
        assert faithfulness(0, 3) == 0.0
        assert faithfulness(1, 1) * 100 == 100.0  # local_search, Erica vagans

    @pytest.mark.parametrize("supported, total", [(5, 4), (-1, 4), (NAN, 4), (1, -1)])
    def test_invalid_raises(self, supported, total):
        with pytest.raises(ValueError):
            faithfulness(supported, total)


class TestHallucinationAndCompleteness:
    def test_hallucination_rate_is_one_minus_faithfulness(self):
        assert hallucination_rate(1, 4) == 0.25
        assert hallucination_rate(1, 4) == 1 - faithfulness(3, 4)
        assert hallucination_rate(0, 2) == 0.0  # case study: 0 hallucinated of 2

    def test_hallucination_rate_no_claims_is_zero(self):
        assert hallucination_rate(0, 0) == 0.0

    def test_completeness(self):
        assert completeness(1, 3) == pytest.approx(1 / 3, **TIGHT)
        assert completeness(0, 1) == 0.0  # marriage example: the one reference claim is missed
        assert completeness(2, 3) == pytest.approx(2 / 3, **TIGHT)  # Einstein: Germany missed

    def test_completeness_without_reference_claims_is_one(self):
        assert completeness(0, 0) == 1.0

    def test_invalid_raises(self):
        with pytest.raises(ValueError):
            hallucination_rate(3, 2)
        with pytest.raises(ValueError):
            completeness(4, 3)


class TestContextRecall:
    def test_no_statements_to_recall(self):
        assert context_recall(0, 0) == 1.0

    def test_erica_vagans_methods(self):
        assert context_recall(1, 1) * 100 == 100.0  # local_search
        assert context_recall(0, 1) * 100 == 0.0  # basic_search

    def test_partial(self):
        assert context_recall(2, 3) == pytest.approx(2 / 3, **TIGHT)

    def test_invalid_raises(self):
        with pytest.raises(ValueError):
            context_recall(4, 3)


class TestContextPrecisionMean:
    def test_mean_of_binary_relevances(self):
        assert context_precision_mean([1, 0, 1, 0]) == 0.5
        assert context_precision_mean([True, False, False]) == pytest.approx(1 / 3, **TIGHT)
        assert context_precision_mean([0, 0, 0]) * 100 == 0.0  # basic_search, Erica vagans
        assert context_precision_mean([1.0, 1]) == 1.0

    def test_order_does_not_matter_unlike_ap(self):
        assert context_precision_mean([1, 0]) == context_precision_mean([0, 1])
        assert average_precision([1, 0]) != average_precision([0, 1])

    def test_no_chunks_is_nan(self):
        # seed 003's table: "NaN (not calculable)"; seed 000: no retrieval context -> NaN
        assert is_nan(context_precision_mean([]))

    @pytest.mark.parametrize("bad", [2, 0.5, -1, None, NAN])
    def test_non_binary_raises(self, bad):
        with pytest.raises(ValueError):
            context_precision_mean([1, bad])

    def test_strings_raise(self):
        with pytest.raises(TypeError):
            context_precision_mean(["1"])


class TestAveragePrecision:
    @pytest.mark.parametrize(
        "rels, expected",
        [
            ([1], 1.0),
            ([1, 1, 0], 1.0),
            ([0, 0, 1], 1 / 3),
            ([1, 0, 1], (1 + 2 / 3) / 2),
            ([0, 1, 1], (1 / 2 + 2 / 3) / 2),
            ([0, 1, 0, 0, 0, 0, 1] + [0] * 9, (1 / 2 + 2 / 7) / 2),  # seed 003: contexts 2 and 7 of 16
        ],
    )
    def test_values(self, rels, expected):
        assert average_precision(rels) == pytest.approx(expected, **TIGHT)

    def test_no_relevant_chunk_is_zero(self):
        assert average_precision([0, 0, 0]) == 0.0
        assert average_precision([False]) == 0.0

    def test_empty_is_nan(self):
        assert is_nan(average_precision([]))

    def test_invalid_raises(self):
        with pytest.raises(ValueError):
            average_precision([0, 2])
        with pytest.raises(ValueError):
            average_precision([None])

    def test_numpy_inputs(self):
        np = pytest.importorskip("numpy")
        assert average_precision(np.array([False, True, False])) == 0.5
        assert context_precision_mean(np.array([1, 0])) == 0.5


class TestRagasComposite:
    def test_default_weights(self):
        assert dict(RAGAS_WEIGHTS) == {
            "faithfulness": 0.30, "context_precision": 0.20, "context_recall": 0.20, "answer_relevance": 0.30,
        }
        assert math.fsum(RAGAS_WEIGHTS.values()) == 1.0

    def test_local_search_with_nan_precision(self):
        scores = {"faithfulness": 100.0, "context_precision": NAN, "context_recall": 100.0, "answer_relevance": 83.27}
        value = ragas_composite(scores)
        assert value == pytest.approx((30.0 + 20.0 + 0.3 * 83.27) / 0.8, **TIGHT)  # 93.72625
        assert value == pytest.approx(93.72625, **TIGHT)
        assert round(value, 2) == 93.73

    def test_basic_search_all_zero_but_relevance(self):
        scores = {"faithfulness": 0.0, "context_precision": 0.0, "context_recall": 0.0, "answer_relevance": 83.27}
        value = ragas_composite(scores)
        assert value == pytest.approx(24.981, **TIGHT)
        assert round(value, 2) == 24.98

    def test_llm_with_context_only_relevance(self):
        scores = {"faithfulness": None, "context_precision": None, "context_recall": None, "answer_relevance": 82.29}
        assert ragas_composite(scores) == pytest.approx(82.29, **TIGHT)
        assert ragas_composite({"answer_relevance": 82.29}) == pytest.approx(82.29, **TIGHT)

    def test_all_missing_is_nan(self):
        assert is_nan(ragas_composite(dict.fromkeys(RAGAS_WEIGHTS, NAN)))
        assert is_nan(ragas_composite(dict.fromkeys(RAGAS_WEIGHTS)))
        assert is_nan(ragas_composite({}))

    def test_scale_agnostic(self):
        unit = {"faithfulness": 1.0, "context_precision": NAN, "context_recall": 1.0, "answer_relevance": 0.8327}
        assert ragas_composite(unit) == pytest.approx(0.9372625, **TIGHT)

    def test_custom_weights_and_renormalisation(self):
        scores = {"faithfulness": 40.0, "context_precision": 60.0, "context_recall": 80.0, "answer_relevance": 100.0}
        equal = dict.fromkeys(RAGAS_WEIGHTS, 0.25)
        assert ragas_composite(scores, equal) == pytest.approx(70.0, **TIGHT)
        doubled = {k: 2 * w for k, w in RAGAS_WEIGHTS.items()}
        assert ragas_composite(scores, doubled) == pytest.approx(ragas_composite(scores), **TIGHT)
        assert ragas_composite(scores) == pytest.approx(0.3 * 40 + 0.2 * 60 + 0.2 * 80 + 0.3 * 100, **TIGHT)

    def test_unknown_keys_raise(self):
        with pytest.raises(ValueError, match="unknown score keys"):
            ragas_composite({"faithfulness": 1.0, "relevance": 1.0})
        with pytest.raises(ValueError, match="unknown weight keys"):
            ragas_composite({"faithfulness": 1.0}, {**RAGAS_WEIGHTS, "bleu": 0.1})

    def test_incomplete_or_negative_weights_raise(self):
        with pytest.raises(ValueError, match="missing"):
            ragas_composite({"faithfulness": 1.0}, {"faithfulness": 1.0})
        with pytest.raises(ValueError):
            ragas_composite({"faithfulness": 1.0}, {**RAGAS_WEIGHTS, "faithfulness": -0.3})

    def test_infinite_score_raises(self):
        with pytest.raises(ValueError):
            ragas_composite({"faithfulness": float("inf")})


class TestFactualAccuracyAndGrades:
    def test_weights(self):
        assert factual_accuracy(100, 100, 100) == 100.0
        assert factual_accuracy(100, 0, 0) == 50.0
        assert factual_accuracy(0, 100, 0) == 30.0
        assert factual_accuracy(0, 0, 100) == 20.0
        assert factual_accuracy(80, 60, 40) == pytest.approx(66.0, **TIGHT)

    def test_missing_criterion_is_nan(self):
        assert is_nan(factual_accuracy(90, None, 80))
        assert is_nan(factual_accuracy(NAN, 90, 80))

    @pytest.mark.parametrize("args", [(101, 50, 50), (50, -1, 50)])
    def test_out_of_range_raises(self, args):
        with pytest.raises(ValueError):
            factual_accuracy(*args)

    @pytest.mark.parametrize(
        "score, grade",
        [
            (100, "A"), (80, "A"), (79.99, "B"), (60, "B"), (59.99, "C"), (40, "C"),
            (39.99, "D"), (20, "D"), (19.99, "E"), (0, "E"),
        ],
    )
    def test_grade_boundaries(self, score, grade):
        assert accuracy_grade(score) == grade

    @pytest.mark.parametrize("bad", [NAN, -0.5, 100.5])
    def test_grade_of_invalid_raises(self, bad):
        with pytest.raises(ValueError):
            accuracy_grade(bad)

    @pytest.mark.parametrize("grade, value", [("A", 1.0), ("B", 0.75), ("C", 0.5), ("D", 0.25), ("E", 0.0), (" a ", 1.0)])
    def test_grade_value(self, grade, value):
        assert grade_value(grade) == value

    def test_unknown_grade_raises(self):
        with pytest.raises(ValueError):
            grade_value("F")
        with pytest.raises(TypeError):
            grade_value(1)

    def test_grade_chain(self):
        assert grade_value(accuracy_grade(factual_accuracy(80, 60, 40))) == 0.75  # 66 -> B


class TestSemantic:
    @pytest.mark.parametrize(
        "cosine, percent",
        [(1.0, 100.0), (0.9999, 99.99), (0.9672, 96.72), (0.8797, 87.97), (0.9075, 90.75), (0.123456, 12.35)],
    )
    def test_semantic_similarity_percent(self, cosine, percent):
        assert semantic_similarity_percent(cosine) == percent

    def test_negative_cosine_floors_at_zero(self):
        assert semantic_similarity_percent(-0.3) == 0.0
        assert semantic_similarity_percent(-1.0) == 0.0

    def test_missing_and_invalid(self):
        assert is_nan(semantic_similarity_percent(NAN))
        assert is_nan(semantic_similarity_percent(None))
        with pytest.raises(ValueError):
            semantic_similarity_percent(1.5)

    def test_whole_points(self):
        # the offline judge's chunk relevance score: the same percentage in whole points
        assert semantic_similarity_percent(0.5731, 0) == 57.0
        assert semantic_similarity_percent(-0.2, 0) == 0.0

    @pytest.mark.parametrize(
        "p, r, expected",
        [(1, 1, 1.0), (0.5, 1, 2 / 3), (0.8, 0.6, 0.96 / 1.4), (0, 1, 0.0), (0, 0, 0.0), (50, 100, 200 / 3)],
    )
    def test_bert_score_f1(self, p, r, expected):
        assert f1_from_precision_recall(p, r) == pytest.approx(expected, **TIGHT)

    def test_bert_score_f1_missing_and_invalid(self):
        assert is_nan(f1_from_precision_recall(NAN, 0.5))
        assert is_nan(f1_from_precision_recall(0.5, None))
        with pytest.raises(ValueError):
            f1_from_precision_recall(-0.1, 0.5)


class TestAnswerClass:
    @pytest.mark.parametrize(
        "label, value",
        [("CORRECT", 1.0), ("WRONG", 0.0), ("DON'T KNOW", 0.0), ("don\u2019t know", 0.0), ("DONT_KNOW", 0.0), ("correct", 1.0)],
    )
    def test_values(self, label, value):
        assert answer_class_value(label) == value

    def test_mean_is_share_correct(self):
        # seed 003: 17 CORRECT, 6 WRONG, 1 DON'T KNOW of 24 -> 70.8% correct
        labels = ["CORRECT"] * 17 + ["WRONG"] * 6 + ["DON'T KNOW"]
        share = sum(map(answer_class_value, labels)) / len(labels)
        assert share == pytest.approx(17 / 24, **TIGHT)
        assert round(share * 100, 1) == 70.8

    def test_unknown_raises(self):
        with pytest.raises(ValueError):
            answer_class_value("MAYBE")


# =========================================================================== seed 001

class TestVerdict:
    @pytest.mark.parametrize("overall, label", [(5, "pass"), (4, "pass"), (3, "partial"), (2, "fail"), (1, "fail")])
    def test_seed_table(self, overall, label):
        assert verdict(overall) == label

    @pytest.mark.parametrize("overall, label", [(4.0, "pass"), (3.99, "partial"), (3.5, "partial"), (2.99, "fail"), (2.5, "fail")])
    def test_non_integer_thresholds(self, overall, label):
        assert verdict(overall) == label

    def test_seed_json_example_is_consistent(self):
        assert verdict(4) == "pass"  # {"overall_score": 4, "verdict": "pass"}

    @pytest.mark.parametrize("bad", [0, 0.5, 6, NAN])
    def test_invalid_raises(self, bad):
        with pytest.raises(ValueError):
            verdict(bad)

    @pytest.mark.parametrize("label, value", [("pass", 1.0), ("partial", 0.5), ("fail", 0.0), ("PASS", 1.0), (" Fail ", 0.0)])
    def test_verdict_value(self, label, value):
        assert verdict_value(label) == value

    def test_unknown_verdict_raises(self):
        with pytest.raises(ValueError):
            verdict_value("ok")


# =========================================================================== module hygiene

def test_module_imports_only_the_standard_library():
    tree = ast.parse(Path(f.__file__).read_text())
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "no relative (project) imports"
            roots.add(node.module.split(".")[0])
    assert roots, "the check found no imports at all"
    assert roots <= set(sys.stdlib_module_names) | {"__future__"}, roots


def test_every_public_function_has_a_one_line_docstring_citing_its_source():
    functions = [getattr(f, name) for name in f.__all__ if inspect.isfunction(getattr(f, name))]
    assert len(functions) >= 20
    for fn in functions:
        doc = fn.__doc__ or ""
        assert doc and "\n" not in doc.strip(), fn.__name__
        if fn not in (ratio, half_up):  # the generic helpers have no single source
            assert "seed" in doc or "DESIGN.md" in doc, fn.__name__
