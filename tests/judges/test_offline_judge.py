"""The offline judge (evaluators/judges/offline.py) on the real packaged all-MiniLM-L6-v2.

The model is loaded once for the module. The seeds' worked examples are exact tests; RAGChecker's
labelled claim x chunk pairs are a measurement (printed, not a threshold): the judge is a
heuristic, and this file records how it does rather than bending it to a tiny fixture.
"""
from __future__ import annotations

import json
import time
from collections import Counter

import pytest

from evaluators.judges import embeddings
from evaluators.runs.planning import plan
from evaluators.judges import offline
from evaluators.judges.offline import build_matrices, build_matrix, segment_claims, support
from evaluators.records.judgments import CONTRADICTED, NOT_FOUND, SUPPORTED, ClaimMatrix
from evaluators.loaders import load
from evaluators.metrics.claims import answer_claim_verdicts, claim_metrics, tp_fp_fn
from evaluators.records import OK, Chunk, GoldenItem, RagOutput, Sample
from tests.helpers import ROOT

RAGCHECKER = ROOT.parent / "shared" / "data" / "ragchecker_examples" / "checking_outputs.json"
NLI = {"Entailment": SUPPORTED, "Contradiction": CONTRADICTED, "Neutral": NOT_FOUND}

# Seed 000, section 6 (the white paper's case study)
SEED_000_QUESTION = "Do you think this kind of technology is exciting or concerning?"
SEED_000_ANSWER = "Game changer for disabilities, but emotionally exhausting."
SEED_000_REFERENCE = "Mostly exciting, though there are some risks."
SEED_000_CHUNKS = (
    "Interviewer: What\u2019s a benefit you can imagine?\nInterviewee: For people with disabilities\u2014especially "
    "speech disabilities\u2014it could be a game changer. Also might help people with anxiety express themselves "
    "more easily.",
    "Interviewer: And a possible downside?\nInterviewee: Mental fatigue maybe? Or like, accidentally leaking a "
    "private thought. I think it could be emotionally exhausting to always filter your own brain.",
    "Interviewer: Could this tech exist soon?\nInterviewee: I mean, we're not *that* far off. With the pace of "
    "brain-computer interface research? It\u2019s coming. So yeah, maybe within our lifetime.",
)


@pytest.fixture(scope="module", autouse=True)
def model():
    return embeddings.model()


def sample(answer: str, reference: str = "", chunks: tuple[str, ...] = (), question: str = "Q?") -> Sample:
    contexts = tuple(Chunk(str(i + 1), text) for i, text in enumerate(chunks))
    return Sample(GoldenItem("q1", question, reference), RagOutput("q1", "local_search", answer, contexts))


# -- claims ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, claims", [
    ("", ()),
    ("   \n ", ()),
    ("Cornish heath", ("Cornish heath",)),
    ("1879", ("1879",)),
    (SEED_000_ANSWER, ("Game changer for disabilities", "emotionally exhausting.")),
    # a list joined by ", and" stays one claim: the item before the conjunction is one word
    ("The flag has blue, red, and yellow stripes.", ("The flag has blue, red, and yellow stripes.",)),
    # a bare "and" splits only between two clause-sized sides
    ("Einstein was born in Germany and developed the theory of relativity.",
     ("Einstein was born in Germany", "developed the theory of relativity.")),
    ("The structure is wind and watertight.", ("The structure is wind and watertight.",)),
    ("It rained all day; the roads flooded near Truro.", ("It rained all day", "the roads flooded near Truro.")),
    # abbreviations and initials do not end a sentence; a lowercase word after a period does not start one
    ("Mr. Smith visited St. Michael's Mount in 1884. J. Smith stayed, e.g. at Penzance.",
     ("Mr. Smith visited St. Michael's Mount in 1884.", "J. Smith stayed, e.g. at Penzance.")),
    ("1. Einstein was born in 1879.\n2. Einstein was born in Spain.",
     ("Einstein was born in 1879.", "Einstein was born in Spain.")),
    # questions, abstentions and pieces without a content word claim nothing
    ("I don't know: the retrieved passages do not say.", ()),
    ("Is it Truro? It is Falmouth. And so on.", ("It is Falmouth.",)),
])
def test_segment_claims(text, claims):
    assert segment_claims(text) == claims


def test_a_third_person_unknown_is_a_claim_not_an_abstention():
    assert segment_claims("The author of the epitaph is unknown.") == ("The author of the epitaph is unknown.",)


# -- support of a claim by a chunk ---------------------------------------------------------------------

@pytest.mark.parametrize("claim, chunk, verdict", [
    ("Einstein was born in 1879", "Einstein was born in 1897 in Ulm.", CONTRADICTED),
    ("Einstein was born in 1879", "Einstein was born in 1879 in Ulm.", SUPPORTED),
    ("The museum is open on Sundays", "The museum is not open on Sundays.", CONTRADICTED),
    ("The museum is not open on Sundays", "The museum is open on Sundays.", CONTRADICTED),
    ("The museum doesn't open on Sundays", "The museum is open on Sundays.", CONTRADICTED),
    ("Paris is the capital of France", "Bananas are rich in potassium. They grow in the tropics.", NOT_FOUND),
    ("Cornish heath", "Erica vagans, the Cornish heath, grows on the Lizard.", SUPPORTED),
    # plural and inflection do not matter
    ("The castle walls were repaired", "They repair the castle wall every spring.", SUPPORTED),
    # a number the chunk does not state at all: the chunk is silent, not contrary
    ("The castle was built in 1150", "The castle was built by the Normans.", NOT_FOUND),
    # a negation in another clause of the sentence says nothing about the claim
    ("the home of Ygrayne and Arthur",
     "It was warm as summer, yet with a brightness that summer never has, at Tintagel, the home of Ygrayne and Arthur.",
     SUPPORTED),
    # another country: the cross-encoder reads a contradiction where the heuristic saw only a missing name
    ("Einstein was born in Spain", "Einstein was born in Germany.", CONTRADICTED),
    # a paraphrase with few shared words, which the heuristic alone missed
    ("The Chipmunks were created by Ross Bagdasarian", "Ross Bagdasarian invented the Chipmunks in 1958.", SUPPORTED),
])
def test_support(claim, chunk, verdict):
    assert support(claim, chunk) == verdict
    assert support(claim, Chunk("c1", chunk)) == verdict


def test_an_empty_chunk_supports_nothing():
    assert support("Einstein was born in 1879", "") == NOT_FOUND


# -- the seeds' worked examples ------------------------------------------------------------------------

def test_seed_000_case_study_two_claims_supported_by_chunks_1_and_2_chunk_3_unused():
    m = build_matrix(sample(SEED_000_ANSWER, SEED_000_REFERENCE, SEED_000_CHUNKS, SEED_000_QUESTION))
    assert m.answer_claims == ("Game changer for disabilities", "emotionally exhausting.")
    assert m.answer_vs_chunks == ((SUPPORTED, NOT_FOUND, NOT_FOUND), (NOT_FOUND, SUPPORTED, NOT_FOUND))
    scores = claim_metrics(m)
    assert scores["faithfulness"].value == 1.0
    assert scores["wp_recall"].value == 1.0
    assert scores["wp_precision"].value == pytest.approx(2 / 3)
    assert scores["wp_precision"].detail == "2/3 chunks used by the answer: 1, 2"


def test_seed_002_einstein_answer_against_the_reference_gives_tp_2_fp_2_fn_1():
    reference = "Einstein was born in 1879. Einstein was born in Germany. Einstein developed the theory of relativity."
    answer = ("Einstein was born in 1879. Einstein was born in Spain. Einstein developed the theory of relativity. "
              "Einstein won the Nobel Prize in Physics in 1921.")
    m = build_matrix(sample(answer, reference))
    assert tp_fp_fn(m) == {
        "TP": ["Einstein was born in 1879.", "Einstein developed the theory of relativity."],
        "FP": ["Einstein was born in Spain.", "Einstein won the Nobel Prize in Physics in 1921."],
        "FN": ["Einstein was born in Germany."],
    }
    assert claim_metrics(m)["answer_correctness_f1"].value == pytest.approx(2 / 3.5)


def test_seed_002_marriage_age_16_vs_18_is_a_contradiction_both_ways():
    m = build_matrix(sample("The legal age for marriage in England is 16 years old",
                            "The legal age for marriage in England is 18 years old"))
    assert (m.answer_vs_reference, m.reference_vs_answer) == ((CONTRADICTED,), (CONTRADICTED,))
    assert claim_metrics(m)["answer_correctness_f1"].value == 0.0


# -- chunk relevance -----------------------------------------------------------------------------------

def test_chunk_relevance_is_the_question_cosine_of_the_best_sentence():
    question = "Which plant known as Erica vagans is also called by another common name?"
    chunks = ("The weather was fine. Erica vagans, the Cornish heath, covers the cliffs.",
              "The train left Paddington at nine in the morning.", "")
    m = build_matrix(sample("Cornish heath", "Cornish heath", chunks, question))
    on_topic, off_topic, empty = m.chunk_relevance
    assert on_topic.relevant and not off_topic.relevant and not empty.relevant
    assert 0 <= off_topic.score < offline.RELEVANCE_COSINE * 100 <= on_topic.score <= 100
    assert on_topic.score == round(on_topic.score)
    assert on_topic.reason == f"offline: question-chunk cosine {on_topic.score / 100:.2f}"


# -- matrices: shape, determinism, batching --------------------------------------------------------------

def test_a_sample_without_answer_claims_or_chunks_gives_a_valid_empty_matrix():
    m = build_matrix(sample("I don't know.", "Cornish heath"))
    assert (m.answer_claims, m.chunk_ids, m.reference_claims) == ((), (), ("Cornish heath",))
    assert m.reference_vs_answer == (NOT_FOUND,)
    assert all(r.status in (OK, "not_applicable") for r in claim_metrics(m).values())


def test_same_input_gives_the_identical_matrix_alone_or_in_a_batch():
    seed = sample(SEED_000_ANSWER, SEED_000_REFERENCE, SEED_000_CHUNKS, SEED_000_QUESTION)
    other = sample("Einstein was born in 1879.", "Einstein was born in 1879.", ("Einstein was born in 1897.",))
    first = build_matrix(seed)
    embeddings.clear_cache()  # recompute the vectors, in a batch of another make-up
    assert build_matrices([other, seed])[1] == first
    assert build_matrix(seed) == first


@pytest.fixture(scope="module")
def demo_samples() -> list[Sample]:
    golden = load(ROOT / "data" / "demo" / "novel_44557_golden.csv", role="golden")
    outputs = load(ROOT / "data" / "demo" / "novel_44557_outputs.jsonl", role="outputs")
    return plan(golden.golden, outputs.outputs).samples


def test_the_demo_batch_builds_a_valid_matrix_per_sample_with_ok_claim_metrics(demo_samples):
    assert len(demo_samples) == 206
    embeddings.clear_cache()  # time the embedding too, not the cache of an earlier test
    start = time.perf_counter()
    matrices = build_matrices(demo_samples)
    seconds = time.perf_counter() - start
    print(f"\noffline judge: {len(matrices)} demo samples in {seconds:.1f} s")
    assert len(matrices) == 206 and all(isinstance(m, ClaimMatrix) for m in matrices)
    for s, m in zip(demo_samples, matrices):
        assert m.chunk_ids == tuple(c.chunk_id for c in s.output.contexts)
        scores = claim_metrics(m)
        statuses = {metric: r.status for metric, r in scores.items()}
        # context_utilization (RAGChecker's) has nothing to measure where no reference claim is in the chunks
        nothing_retrieved = scores["context_recall"].value == 0
        assert statuses == {k: "not_applicable" if k == "context_utilization" and nothing_retrieved else OK
                            for k in statuses}, (s.key, statuses)
    # The demo answers are sentences copied out of their own chunks: nearly every claim is supported.
    verdicts = Counter(v for m in matrices for v in answer_claim_verdicts(m))
    print(f"answer claims vs chunks: {dict(verdicts)}")
    assert verdicts[SUPPORTED] / sum(verdicts.values()) > 0.9


# -- agreement with RAGChecker's labels (a measurement, not a threshold) --------------------------------

def ragchecker_pairs() -> list[tuple[str, str, str]]:
    """(response claim, chunk, gold verdict) for every pair RAGChecker labelled; its claims are
    triplets, joined with spaces."""
    pairs = []
    for result in json.loads(RAGCHECKER.read_text())["results"]:
        chunks = [c["text"] for c in result["retrieved_context"]]
        for triplet, labels in zip(result["response_claims"], result["retrieved2response"]):
            pairs += [(" ".join(triplet), chunk, NLI[label]) for chunk, label in zip(chunks, labels)]
    return pairs


def test_agreement_with_ragcheckers_claim_chunk_labels_is_measured():
    pairs = ragchecker_pairs()
    confusion = Counter((gold, support(claim, chunk)) for claim, chunk, gold in pairs)
    accuracy = sum(n for (gold, pred), n in confusion.items() if gold == pred) / len(pairs)
    labels = (SUPPORTED, CONTRADICTED, NOT_FOUND)
    print(f"\nRAGChecker retrieved2response: {len(pairs)} pairs, accuracy {accuracy:.3f}")
    print("gold \\ offline " + " ".join(f"{p:>12}" for p in labels))
    for gold in labels:
        print(f"{gold:>15} " + " ".join(f"{confusion[gold, p]:>12}" for p in labels))
    assert len(pairs) == 59 and sum(confusion.values()) == 59
    assert 0.0 <= accuracy <= 1.0
