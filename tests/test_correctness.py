"""evaluators/judges/correctness.py: the offline correctness scorer, its signals and its shipped fit."""
import json
import math

import numpy as np
import pytest

from evaluators.judges import correctness, offline
from evaluators.metrics.claims import claim_metrics
from evaluators.metrics.rubric import answer_contradicted_by_reference, correct, similarities
from evaluators.schema import GoldenItem, RagOutput, Result, Sample


def test_signals_of_a_sentence_around_a_short_reference():
    x = correctness.signals("The Chipmunks were created by Ross Bagdasarian Sr., known as David Seville.",
                            "David Seville", cosine=0.52, bertscore=(0.55, 0.7, 0.61), contradicted=0.0)
    named = dict(zip(correctness.SIGNALS, x))
    assert named["reference_recall"] == 1.0 and named["reference_in_answer"] == 1.0
    assert named["token_f1"] == pytest.approx(2 * 2 / (11 + 2))  # 11 SQuAD tokens ("the" dropped), 2 shared
    assert named["cosine"] == 0.52 and named["bertscore"] == 0.61
    assert named["bertscore_precision"] == 0.55 and named["bertscore_recall"] == 0.7
    assert named["abstains"] == 0.0 and named["contradicted"] == 0.0
    assert named["answer_length"] == pytest.approx(math.log1p(12) / math.log1p(200))  # 12 words


def test_containment_is_on_whole_tokens_and_abstention_is_a_signal():
    x = dict(zip(correctness.SIGNALS, correctness.signals("Parisian cafes", "Paris", 0.6, (0.7, 0.7, 0.7), 0.0)))
    assert x["reference_in_answer"] == 0.0 and x["reference_recall"] == 0.0
    x = dict(zip(correctness.SIGNALS, correctness.signals("I'm sorry, I couldn't find that.", "Paris", 0.1, (0.3, 0.3, 0.3), 0.0)))
    assert x["abstains"] == 1.0
    assert correctness.signals("", "Paris", -0.2, (0.0, 0.0, 0.0), 0.0)[3] == 0.0  # a negative cosine counts as 0


def test_the_shipped_fit_orders_answers_as_people_would():
    fitted = json.loads(correctness.WEIGHTS.read_text())
    assert fitted["signals"] == list(correctness.SIGNALS) and "EVOUNA" in fitted["fitted_on"]
    assert fitted["dev_auroc"] > 0.8  # on the dev part it was fitted on; test-part figures: bench/results

    def p(answer: str, contradicted: float = 0.0) -> float:
        sample = Sample(GoldenItem("q", "Who was the man behind The Chipmunks?", "David Seville"),
                        RagOutput("q", "m", answer))
        (cosine, bertscore), = similarities([sample])  # the semantic family's numbers, as the engine reads them
        return correctness.probability(correctness.signals(answer, "David Seville", cosine, bertscore, contradicted))

    right, hedged, wrong = p("It was David Seville."), p("I couldn't find any information about it."), \
        p("It was Alvin Stardust.", 1.0)
    assert right > 0.5 > max(hedged, wrong)
    assert right == round(right, 4)  # rounded: deterministic across platforms


def test_a_fit_on_other_signals_is_refused(tmp_path, monkeypatch):
    bad = tmp_path / "correctness.json"
    bad.write_text(json.dumps({"signals": ["token_f1"], "coefficients": [1.0], "intercept": 0.0}))
    monkeypatch.setattr(correctness, "WEIGHTS", bad)
    correctness._model.cache_clear()
    try:
        with pytest.raises(RuntimeError, match="fit_correctness"):
            correctness.probability(np.zeros(len(correctness.SIGNALS)))
    finally:
        correctness._model.cache_clear()


def test_short_answers_are_names_phrases_and_alias_lists():
    assert correctness.is_short_answer("David Seville")
    assert correctness.is_short_answer("Internal exile/Exiles/Transported for life/Voluntary exile")
    assert correctness.is_short_answer("TCP/IP")
    assert not correctness.is_short_answer("Whitesand Bay is located in Cornwall.")
    # One short alias is enough; a parenthesis is a note to the grader (EVOUNA references).
    assert correctness.is_short_answer("We don't wake up for less than $10,000 a day/Linda Evangelista")
    assert correctness.is_short_answer("PRINCE WILLIAM (accept DUKE OF CAMBRIDGE or the heir's heir)")
    assert not correctness.is_short_answer("Trying to steal the Crown Jewels from the Tower of London")


def _p_correct(answer: str, reference: str) -> Result:
    """P(correct) of one answer as the offline rubric computes it (claim matrix, semantic family, scorer)."""
    sample = Sample(GoldenItem("q", "Where is Whitesand Bay?", reference), RagOutput("q", "m", answer))
    claims = dict(claim_metrics(offline.build_matrix(sample)))
    (cosine, bertscore), = similarities([sample])
    return correct(sample, cosine, bertscore, answer_contradicted_by_reference(offline.build_matrix(sample)),
                   claims["completeness"])


def test_a_sentence_reference_needs_its_key_points_stated():
    reference = "Whitesand Bay is located in Cornwall."
    on_topic = _p_correct("Yes, we would go to Whitesand Bay.", reference)  # same topic, the fact not stated
    assert on_topic.value < 0.5 and "x completeness 0.00" in on_topic.detail
    stated = _p_correct("Whitesand Bay is in Cornwall, near Plymouth.", reference)
    assert stated.value > 0.5 and "x completeness 1.00" in stated.detail


def test_a_short_reference_is_the_scorer_alone():
    r = _p_correct("It is in Cornwall.", "Cornwall")
    assert r.value > 0.5 and "completeness" not in r.detail
