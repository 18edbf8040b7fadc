"""calibration/sets.py: every human-labelled set loads, with sound ids, labels, counts and split."""
from collections import Counter

import pytest

from calibration import sets
from calibration.sets import CONTRADICTED, DATA, DEV, NOT_FOUND, SUPPORTED, TEST

if not DATA.is_dir():
    pytest.skip(f"the shared data is missing: {DATA}", allow_module_level=True)

NAMES = list(sets.SETS)
BINARY = {True, False}
VERDICTS = {SUPPORTED, CONTRADICTED, NOT_FOUND}
VOCABULARY = {
    "evouna": BINARY,
    "snli": VERDICTS,
    "fool_me_twice": {SUPPORTED, CONTRADICTED},
    "factcheck_stance": VERDICTS | {"partial"},
    "begin": BINARY,
    "summedits": BINARY,
    "clapnq": BINARY,
    "squad2": BINARY,
    "haluquestqa": BINARY,
}
GRADED = {"inspectorraget": (1.0, 4.0), "squality": (0.0, 100.0), "alce_eli5": (1.0, 5.0)}
# Item counts: SOURCE.md states evouna (8,331 + 1,594), snli (19,666), factcheck (3,305), clapnq
# (300 + 300) and inspectorraget (100 tasks x 3 models); the others are the files' counts as read.
COUNTS = {
    "evouna": 9925, "snli": 19666, "fool_me_twice": 2549, "factcheck_stance": 3305, "begin": 4453,
    "summedits": 4681, "inspectorraget": 300, "clapnq": 600, "squad2": 6078, "squality": 900, "haluquestqa": 1396,
    "alce_eli5": 400,
}


def test_the_registry_names_every_set():
    assert set(NAMES) == set(VOCABULARY) | set(GRADED) == set(COUNTS)


@pytest.mark.parametrize("name", NAMES)
def test_a_set_loads_with_unique_ids_and_stripped_texts(name):
    items = sets.load(name)
    assert isinstance(items, tuple) and items
    assert len(items) == COUNTS[name]
    assert all(isinstance(item, sets.Item) and item.set == name for item in items)
    ids = [item.item_id for item in items]
    assert len(set(ids)) == len(ids)
    for item in items:
        for text in (item.item_id, item.group, item.question, item.reference, item.answer, item.raw_label):
            assert isinstance(text, str) and text == text.strip(), (item.item_id, text[:60])
        assert item.item_id and item.group and item.raw_label
        assert isinstance(item.contexts, tuple)
        assert all(isinstance(c, str) and c and c == c.strip() for c in item.contexts), item.item_id
        assert all(isinstance(key, str) for key, _ in item.extra)


@pytest.mark.parametrize("name", NAMES)
def test_a_set_is_cached_and_deterministic(name):
    reader = sets.SETS[name]
    assert reader() is reader()  # lru_cache
    assert reader.__wrapped__() == reader()  # a fresh read gives the same items in the same order


@pytest.mark.parametrize("name", NAMES)
def test_labels_are_in_the_set_vocabulary(name):
    items = sets.load(name)
    if name in GRADED:
        low, high = GRADED[name]
        assert all(isinstance(item.label, float) and low <= item.label <= high for item in items)
        return
    labels = Counter(item.label for item in items)
    assert set(labels) <= VOCABULARY[name], labels
    if VOCABULARY[name] is BINARY:
        assert all(type(item.label) is bool for item in items)  # not 0 / 1
    assert len(labels) >= 2, labels  # every set has more than one label


@pytest.mark.parametrize("name", NAMES)
def test_the_split_is_balanced_and_keeps_each_group_on_one_side(name):
    items = sets.load(name)
    dev, test = sets.load(name, DEV), sets.load(name, TEST)
    assert dev and test
    assert len(dev) + len(test) == len(items)
    assert all(item.split == DEV for item in dev) and all(item.split == TEST for item in test)
    dev_groups, test_groups = {i.group for i in dev}, {i.group for i in test}
    assert not dev_groups & test_groups
    share = len(dev_groups) / (len(dev_groups) + len(test_groups))
    assert 0.35 <= share <= 0.65, share
    assert 0.35 <= len(dev) / len(items) <= 0.65


@pytest.mark.parametrize("name", ["fool_me_twice", "factcheck_stance", "clapnq", "summedits", "squad2", "begin"])
def test_no_passage_sits_on_both_sides(name):
    sides: dict[str, set[str]] = {}
    for item in sets.load(name):
        for context in item.contexts:
            sides.setdefault(context, set()).add(item.split)
    crossing = [c[:60] for c, s in sides.items() if len(s) > 1]
    assert not crossing, crossing[:3]


def test_load_rejects_unknown_names_and_splits():
    with pytest.raises(KeyError):
        sets.load("no_such_set")
    with pytest.raises(ValueError):
        sets.load("clapnq", "train")


def test_evouna_counts_and_fields():
    items = sets.load("evouna")
    assert Counter(item.label for item in items) == {True: 8331, False: 1594}
    assert Counter(item.raw_label for item in items) == {"correct": 8331, "incorrect": 1594}
    first = {item.item_id: item for item in items}["0:fid"]
    assert first.question == first.group == "Who was the man behind The Chipmunks?"
    assert first.reference == first.answer == "David Seville" and first.label is True
    assert not first.contexts
    assert {item.item_id.split(":")[1] for item in items} == set(sets.EVOUNA_SYSTEMS)


def test_snli_maps_the_three_labels():
    items = sets.load("snli")
    raw = Counter(item.raw_label for item in items)
    assert raw == {"entailment": 6697, "contradiction": 6515, "neutral": 6454}
    mapping = {item.raw_label: item.label for item in items}
    assert mapping == {"entailment": SUPPORTED, "contradiction": CONTRADICTED, "neutral": NOT_FOUND}
    assert all(item.contexts == (item.group,) and not item.question for item in items)


def test_fool_me_twice_has_evidence_chunks():
    items = sets.load("fool_me_twice")
    assert all(1 <= len(item.contexts) <= 2 for item in items)
    assert Counter(item.raw_label for item in items) == {"SUPPORTS": 1277, "REFUTES": 1272}


def test_factcheck_stance_counts():
    items = sets.load("factcheck_stance")
    assert Counter(item.raw_label for item in items) == {
        "irrelevant": 2057, "completely-support": 696, "partially-support": 391, "refute": 161}
    assert Counter(item.label for item in items) == {
        NOT_FOUND: 2057, SUPPORTED: 696, "partial": 391, CONTRADICTED: 161}
    assert all(len(item.contexts) == 1 for item in items)


def test_begin_labels():
    items = sets.load("begin")
    assert Counter(item.raw_label for item in items) == {
        "Fully attributable": 1631, "Not fully attributable": 2737, "Generic": 85}
    assert all(item.label is (item.raw_label == "Fully attributable") for item in items)
    assert all(item.contexts == (item.group,) for item in items)


def test_summedits_domains_and_document_groups():
    items = sets.load("summedits")
    assert Counter(item.label for item in items) == {True: 1648, False: 3033}
    domains = Counter(dict(item.extra)["domain"] for item in items)
    assert len(domains) == 8 and domains["news"] == 819
    by_group: dict[str, set[str]] = {}
    for item in items:
        by_group.setdefault(item.group, set()).add(item.contexts[0])
    assert all(len(docs) == 1 for docs in by_group.values())


def test_inspectorraget_items():
    items = sets.load("inspectorraget")
    assert len({item.group for item in items}) == 100
    assert Counter(item.item_id.rsplit(":", 1)[1] for item in items) == {"gpt": 100, "llama": 100, "mistral": 100}
    unanswerable = [item for item in items if not dict(item.extra)["answerable"]]
    assert len(unanswerable) == 60 and all(item.reference == "" for item in unanswerable)
    for item in items:
        extra = dict(item.extra)
        assert list(extra) == ["answer_relevance", "fluency", "answerable", "faithfulness_ratings",
                               "answer_relevance_ratings"]
        ratings = extra["faithfulness_ratings"]
        assert len(ratings) == 3 and all(r in (1, 2, 3, 4) for r in ratings)
        assert item.label == pytest.approx(sum(ratings) / 3)
        assert item.raw_label == ",".join(map(str, ratings))
        assert len(extra["answer_relevance_ratings"]) == 3
        assert 1.0 <= extra["answer_relevance"] <= 4.0 and 1.0 <= extra["fluency"] <= 4.0
        assert item.question and item.answer and len(item.contexts) == 1


def test_clapnq_answerable_and_unanswerable():
    items = sets.load("clapnq")
    assert Counter(item.label for item in items) == {True: 300, False: 300}
    assert all(bool(item.reference) is item.label and item.answer == item.reference for item in items)


def test_squad2_answerability():
    items = sets.load("squad2")
    assert Counter(item.label for item in items) == {True: 2910, False: 3168}
    for item in items:
        plausible = dict(item.extra)["plausible_answer"]
        assert bool(item.reference) is item.label
        assert bool(plausible) is (not item.label)
        assert item.reference in item.contexts[0] and plausible in item.contexts[0]


def test_squality_compares_each_response_with_the_three_other_references():
    items = sets.load("squality")
    by_response: dict[str, list] = {}
    for item in items:
        by_response.setdefault(dict(item.extra)["response"], []).append(item)
    assert len(by_response) == 300 and all(len(v) == 3 for v in by_response.values())
    assert Counter(dict(i.extra)["system"] for i in items) == {"bart": 300, "bart-dpr": 300, "human": 300}
    for response in by_response.values():
        assert len({i.reference for i in response}) == 3
        assert all(i.answer != i.reference for i in response)  # a human response is never its own reference
        assert len({(i.label, i.answer, i.question) for i in response}) == 1
    references = {}  # every response of a question meets the same three references
    for item in items:
        references.setdefault(dict(item.extra)["question_key"], set()).add(item.reference)
    assert all(len(refs) == 3 for refs in references.values())
    first = next(i for i in items if i.item_id.startswith("50827:0:bart:"))
    assert first.label == pytest.approx(36.666666, abs=1e-4) and dict(first.extra)["coverage"] == 20.0


def test_haluquestqa_pairs_one_preferred_answer_each():
    items = sets.load("haluquestqa")
    pairs: dict[str, list] = {}
    for item in items:
        pairs.setdefault(dict(item.extra)["pair"], []).append(item)
    assert len(pairs) == 698 and all(sum(i.label for i in pair) == 1 for pair in pairs.values())
    assert Counter(i.item_id.split(":")[1] for i in items if i.label) == {"1": 347, "2": 351}
    for pair in pairs.values():
        assert {dict(i.extra)["author"] for i in pair} == {"human", "model"}
    for item in items:
        extra = dict(item.extra)
        # 1 - flagged / sentences as upstream computes it: below 0 (down to -2.5) where more spans than sentences
        assert all(extra[aspect] <= 1.0 for aspect in ("factuality", "completeness", "relevance"))
        assert item.reference == "" and item.contexts == () and item.answer and item.question


def test_alce_eli5_four_systems_rate_one_hundred_questions():
    items = sets.load("alce_eli5")
    assert len({i.group for i in items}) == 100
    assert Counter(i.item_id.rsplit(":", 1)[1] for i in items) == {"0": 100, "1": 100, "2": 100, "3": 100}
    assert all(i.label in (1.0, 2.0, 3.0, 4.0, 5.0) and i.reference == "" for i in items)
    empty = [i for i in items if not i.answer]  # a system that wrote nothing, rated 1 (least useful)
    assert 0 < len(empty) < 40 and all(i.label == 1.0 for i in empty)
