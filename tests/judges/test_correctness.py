"""evaluators/judges/correctness.py: the offline correctness scorer, its signals and its shipped fit."""
import json
import math

import numpy as np
import pytest

from evaluators.judges import correctness, offline
from evaluators.metrics.claims import claim_metrics
from evaluators.metrics.rubric import answer_contradicted_by_reference, correct, similarities
from evaluators.records import GoldenItem, RagOutput, Result, Sample


def named(question: str, answer: str, reference: str, **given) -> dict:
    x = correctness.signals(question, answer, reference, given.get("cosine", 0.5), given.get("bertscore", (0.5, 0.5, 0.5)),
                            given.get("contradicted", 0.0), given.get("completeness", 1.0))
    return dict(zip(correctness.SIGNALS, x))


def test_signals_of_a_sentence_around_a_short_reference():
    x = named("Who was the man behind The Chipmunks?",
              "The Chipmunks were created by Ross Bagdasarian Sr., known as David Seville.", "David Seville",
              cosine=0.52, bertscore=(0.55, 0.7, 0.61))
    assert x["key_recall"] == 1.0 and x["reference_in_answer"] == 1.0
    assert x["name_conflict"] == x["number_conflict"] == x["negation_conflict"] == x["missing_with_other"] == 0.0
    assert x["token_f1"] == pytest.approx(2 * 2 / (11 + 2))  # 11 SQuAD tokens ("the" dropped), 2 shared
    assert x["cosine"] == 0.52 and x["bertscore"] == 0.61
    assert x["bertscore_precision"] == 0.55 and x["bertscore_recall"] == 0.7
    assert x["abstains"] == 0.0 and x["contradicted"] == 0.0 and x["completeness"] == 1.0
    assert x["answer_length"] == pytest.approx(math.log1p(12) / math.log1p(200))  # 12 words
    assert x["reference_length"] == pytest.approx(math.log1p(2) / math.log1p(200))


def test_the_key_is_what_the_reference_says_beyond_the_question():
    sydney = named("What is the capital of Australia?", "The capital of Australia is Sydney.", "Canberra")
    assert sydney["key_recall"] == 0.0 and sydney["name_conflict"] == 1.0 and sydney["missing_with_other"] == 1.0
    marlowe = named("Who wrote Hamlet?", "Hamlet was written by Christopher Marlowe.", "William Shakespeare wrote Hamlet.")
    assert marlowe["key_recall"] == 0.0 and marlowe["name_conflict"] == 1.0  # "wrote Hamlet" is the question's
    assert named("Who wrote Hamlet?", "Shakespeare wrote it.", "William Shakespeare wrote Hamlet.")["key_recall"] == 0.5
    wall = named("When did the Berlin Wall fall?", "The Berlin Wall fell in 1991.", "1989")
    assert wall["number_conflict"] == 1.0 and wall["name_conflict"] == 0.0
    assert named("When did the Berlin Wall fall?", "It fell in 1989.", "1989")["number_conflict"] == 0.0
    assert named("Can penguins fly?", "Penguins can fly.", "No, penguins cannot fly.")["negation_conflict"] == 1.0
    assert named("Can penguins fly?", "Penguins cannot fly.", "No, penguins cannot fly.")["negation_conflict"] == 0.0


def test_aliases_and_common_nouns_capitalised_in_a_list():
    # the best alias counts; a parenthesis is a note to the grader
    x = named("Who was behind The Chipmunks?", "Ross Bagdasarian.", "David Seville/Ross Bagdasarian (accept Sr.)")
    assert x["key_recall"] == 1.0 and x["reference_in_answer"] == 1.0
    # EVOUNA capitalises common nouns in its alias lists: a lowercase mention is no conflict
    sheep = named("From which animal does Haggis come?", "It is made from the lungs of a sheep, in Scotland.",
                  "Sheep/Ovis aries/Domestic ram")
    assert sheep["name_conflict"] == 0.0 and sheep["key_recall"] == 1.0
    assert correctness.aliases("Whitesand Bay is in Cornwall and/or Devon, on the south coast of England, near "
                               "Plymouth and the Rame Head peninsula.") == [
        "Whitesand Bay is in Cornwall and/or Devon, on the south coast of England, near Plymouth and the Rame Head "
        "peninsula."]


def test_short_and_long_references():
    assert not correctness.is_long("David Seville")
    assert not correctness.is_long("Internal exile/Exiles/Transported for life/Voluntary exile")
    assert not correctness.is_long("PRINCE WILLIAM (accept DUKE OF CAMBRIDGE or the heir's heir)")
    assert correctness.is_long("Whitesand Bay is located in Cornwall, England.")
    x = np.arange(len(correctness.SIGNALS), dtype=float)
    assert list(correctness.inputs(x, False)) == [*x, *np.zeros_like(x), 0.0]
    assert list(correctness.inputs(x, True)) == [*x, *x, 1.0]
    assert len(correctness.INPUTS) == 2 * len(correctness.SIGNALS) + 1


def test_the_shipped_fit_orders_answers_as_people_would():
    fitted = json.loads(correctness.WEIGHTS.read_text())
    assert fitted["inputs"] == list(correctness.INPUTS) and "evouna" in fitted["fitted_on"]
    chosen = next(c for c in fitted["candidates"] if c["C"] == fitted["C"])
    assert all(s["difference"] > 0 for s in chosen["leave_one_set_out"].values())  # dev, held-out set; test: bench

    def p(answer: str, reference: str = "David Seville", question: str = "Who was the man behind The Chipmunks?"):
        sample = Sample(GoldenItem("q", question, reference), RagOutput("q", "m", answer))
        matrix = offline.build_matrix(sample)
        (cosine, bertscore), = similarities([sample])  # the semantic family's numbers, as the engine reads them
        r = correct(sample, cosine, bertscore, answer_contradicted_by_reference(matrix),
                    claim_metrics(matrix)["completeness"])
        assert r.value == round(r.value, 4)  # rounded: deterministic across platforms
        return r.value

    right, hedged, wrong = p("It was David Seville."), p("I couldn't find any information about it."), \
        p("It was Alvin Stardust.")
    assert right > 0.5 > max(hedged, wrong)
    # the plainly wrong answers, beside their right twins
    assert p("The capital of Australia is Sydney.", "Canberra", "What is the capital of Australia?") < 0.5 < \
        p("The capital of Australia is Canberra.", "Canberra", "What is the capital of Australia?")
    assert p("Hamlet was written by Christopher Marlowe.", "William Shakespeare wrote Hamlet.", "Who wrote Hamlet?") \
        < 0.5 < p("Hamlet was written by William Shakespeare.", "William Shakespeare wrote Hamlet.", "Who wrote Hamlet?")
    assert p("The Berlin Wall fell in 1991.", "1989", "When did the Berlin Wall fall?") < 0.5 < \
        p("The Berlin Wall fell in 1989.", "1989", "When did the Berlin Wall fall?")


def test_a_fit_on_other_inputs_is_refused(tmp_path, monkeypatch):
    bad = tmp_path / "correctness.json"
    bad.write_text(json.dumps({"inputs": ["token_f1"], "coefficients": [1.0], "intercept": 0.0}))
    monkeypatch.setattr(correctness, "WEIGHTS", bad)
    correctness._model.cache_clear()
    try:
        with pytest.raises(RuntimeError, match="fit_correctness"):
            correctness.probability(np.zeros(len(correctness.SIGNALS)), False)
    finally:
        correctness._model.cache_clear()


def _p_correct(answer: str, reference: str) -> Result:
    """P(correct) of one answer as the offline rubric computes it (claim matrix, semantic family, scorer)."""
    sample = Sample(GoldenItem("q", "Where is Whitesand Bay?", reference), RagOutput("q", "m", answer))
    matrix = offline.build_matrix(sample)
    (cosine, bertscore), = similarities([sample])
    return correct(sample, cosine, bertscore, answer_contradicted_by_reference(matrix),
                   claim_metrics(matrix)["completeness"])


def test_a_sentence_reference_needs_its_key_stated():
    reference = "Whitesand Bay is located in Cornwall."
    on_topic = _p_correct("Yes, we would go to Whitesand Bay.", reference)  # same topic, the fact not stated
    assert on_topic.value < 0.5 and "key_recall 0.00" in on_topic.detail
    stated = _p_correct("Whitesand Bay is in Cornwall, near Plymouth.", reference)
    assert stated.value > 0.5 and "(long reference)" in stated.detail
    short = _p_correct("It is in Cornwall.", "Cornwall")
    assert short.value > 0.5 and "(short reference)" in short.detail
