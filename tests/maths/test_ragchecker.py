"""RAGChecker's diagnostics as pure functions (evaluators/maths/ragchecker.py): RAGChecker's own example output
reproduced from its entailment labels, per question and as the dataset means it reports; minimal pairs; edge cases."""
import math

import pytest

from evaluators.maths import ragchecker as rc
from tests.helpers.ragchecker import ragchecker_outputs

T, F = True, False
PUBLISHED = {  # RAGChecker's metric name -> ours
    "context_utilization": rc.context_utilization,
    "noise_sensitivity_in_relevant": rc.noise_sensitivity_relevant,
    "noise_sensitivity_in_irrelevant": rc.noise_sensitivity_irrelevant,
    "hallucination": rc.hallucination,
    "self_knowledge": rc.self_knowledge,
}


def entailed(labels):
    """RAGChecker's to_bool: only Entailment is True (Neutral and Contradiction are not)."""
    return labels == "Entailment" if isinstance(labels, str) else [entailed(x) for x in labels]


def diagnosis_of(result: dict) -> rc.Diagnosis:
    return rc.diagnose(entailed(result["retrieved2response"]), entailed(result["retrieved2answer"]),
                       entailed(result["answer2response"]), entailed(result["response2answer"]),
                       len(result["retrieved_context"]))


@pytest.mark.parametrize("query", [0, 1])
def test_each_question_gives_ragcheckers_recorded_values(query):
    result = ragchecker_outputs()["results"][query]
    d = diagnosis_of(result)
    for name, formula in PUBLISHED.items():
        assert formula(d) == result["metrics"][name], name  # the same divisions of the same counts
    assert d.recalled / d.reference_claims == result["metrics"]["claim_recall"]
    assert d.relevant_chunks / len(result["retrieved_context"]) == result["metrics"]["context_precision"]


def test_the_dataset_means_are_ragcheckers_rounded_as_it_rounds():
    outputs = ragchecker_outputs()
    diagnoses = [diagnosis_of(r) for r in outputs["results"]]
    for name, formula in PUBLISHED.items():
        mean = sum(formula(d) for d in diagnoses) / len(diagnoses)
        assert round(mean * 100, 1) == outputs["metrics"]["generator"][name], name  # evaluator.py: round(mean x 100, 1)
    assert outputs["metrics"]["generator"]["noise_sensitivity_in_relevant"] == 19.1  # not all zeros: the test can fail


def test_question_0_by_hand():
    """11 response claims: claims 0, 9 and 10 wrong; 0 and 6 entailed by chunk 1, 8 by chunks 0 and 3, 9 by chunk 3;
    chunks 0, 1 and 3 entail a ground-truth claim (relevant), chunk 2 none."""
    d = diagnosis_of(ragchecker_outputs()["results"][0])
    assert d == rc.Diagnosis(answer_claims=11, reference_claims=22, recalled=5, recalled_covered=5, relevant_chunks=3,
                             incorrect_in_relevant=2, incorrect_in_irrelevant=0, incorrect_unfaithful=1,
                             correct_unfaithful=6)


# -- minimal pairs -------------------------------------------------------------------------------------------------
# Two chunks; chunk 0 entails the one reference claim (relevant), chunk 1 none (irrelevant). One wrong answer claim.

def _one_wrong_claim(in_chunks):
    return rc.diagnose([in_chunks], [[T, F]], [F], [F], 2)


def test_a_wrong_claim_moved_from_a_relevant_to_an_irrelevant_chunk_moves_noise_sensitivity_across():
    relevant, irrelevant = _one_wrong_claim([T, F]), _one_wrong_claim([F, T])
    assert (rc.noise_sensitivity_relevant(relevant), rc.noise_sensitivity_irrelevant(relevant)) == (1.0, 0.0)
    assert (rc.noise_sensitivity_relevant(irrelevant), rc.noise_sensitivity_irrelevant(irrelevant)) == (0.0, 1.0)
    for d in (relevant, irrelevant):
        assert rc.hallucination(d) == rc.self_knowledge(d) == 0.0  # a chunk entails it: faithful


def test_a_wrong_claim_in_both_kinds_of_chunk_counts_once_in_relevant():
    both = _one_wrong_claim([T, T])
    assert (rc.noise_sensitivity_relevant(both), rc.noise_sensitivity_irrelevant(both)) == (1.0, 0.0)


def test_a_claim_in_no_chunk_is_hallucination_when_wrong_and_self_knowledge_when_right():
    wrong = rc.diagnose([[F, F]], [[T, F]], [F], [F], 2)
    right = rc.diagnose([[F, F]], [[T, F]], [T], [F], 2)
    assert (rc.hallucination(wrong), rc.self_knowledge(wrong)) == (1.0, 0.0)
    assert (rc.hallucination(right), rc.self_knowledge(right)) == (0.0, 1.0)
    assert rc.noise_sensitivity_relevant(wrong) == rc.noise_sensitivity_irrelevant(wrong) == 0.0


def test_a_right_claim_in_a_chunk_is_no_noise():
    d = rc.diagnose([[T, T]], [[T, F]], [T], [T], 2)
    assert [f(d) for f in PUBLISHED.values()] == [1.0, 0.0, 0.0, 0.0, 0.0]


def test_context_utilization_counts_only_the_reference_claims_the_chunks_hold():
    # 3 reference claims; chunks hold claims 0 and 1; the answer states 0 and 2 (2 from elsewhere)
    d = rc.diagnose([], [[T, F], [F, T], [F, F]], [], [T, F, T], 2)
    assert (d.recalled, d.recalled_covered) == (2, 1) and rc.context_utilization(d) == 0.5
    stated = rc.diagnose([], [[T, F], [F, T], [F, F]], [], [T, T, F], 2)  # states both it was given
    assert rc.context_utilization(stated) == 1.0


def test_a_relevant_chunk_is_one_entailing_a_reference_claim():
    assert rc.relevant_chunks([[F, T, F], [F, T, T]], 3) == [False, True, True]
    assert rc.relevant_chunks([], 2) == [False, False]  # no reference claims: no chunk is relevant in this sense


# -- edge cases ----------------------------------------------------------------------------------------------------

def test_no_answer_claims_is_nothing_wrong_where_ragchecker_says_0_too():
    d = rc.diagnose([], [[T]], [], [T], 1)
    for f in (rc.noise_sensitivity_relevant, rc.noise_sensitivity_irrelevant, rc.hallucination, rc.self_knowledge):
        assert f(d) == 0.0


def test_nothing_recalled_leaves_context_utilization_undefined_not_0():
    assert math.isnan(rc.context_utilization(rc.diagnose([], [[F, F]], [], [T], 2)))  # RAGChecker: 0
    assert math.isnan(rc.context_utilization(rc.diagnose([], [], [], [], 2)))  # no reference claims


def test_no_chunks_every_claim_is_unfaithful():
    d = rc.diagnose([[], []], [[]], [T, F], [F], 0)
    assert (rc.self_knowledge(d), rc.hallucination(d), rc.noise_sensitivity_relevant(d)) == (0.5, 0.5, 0.0)


@pytest.mark.parametrize("args, error, message", [
    (([[T]], [[T]], [T, F], [T], 1), ValueError, "answer_correct must have 1 entries, has 2"),
    (([[T, F]], [[T]], [T], [T], 1), ValueError, r"answer_in_chunks\[0\] must have 1 entries, has 2"),
    (([[T]], [[T]], [T], [], 1), ValueError, "reference_covered must have 1 entries, has 0"),
    (([[1]], [[T]], [T], [T], 1), TypeError, r"answer_in_chunks\[0\]\[0\] must be a bool"),
    (([[T]], [[None]], [T], [T], 1), TypeError, r"reference_in_chunks\[0\]\[0\] must be a bool"),
])
def test_bad_input_names_what_is_wrong(args, error, message):
    with pytest.raises(error, match=message):
        rc.diagnose(*args)
