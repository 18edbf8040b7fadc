"""Every human-labelled set in ../shared/data as `Item`s, each with its fixed dev/test split.

The split is by a hash of the set name and the item's group (the question, premise or document an
item shares with others), so every answer to one question, or every summary of one document, sits
on the same side: nothing fitted on dev has seen a test item's text. Anything fitted or tuned uses
`split == "dev"` only; bench/judge_quality.py reports `split == "test"`.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

DATA = Path(os.environ.get("RAGSCOPE_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
CALIBRATION = DATA / "calibration"

DEV, TEST = "dev", "test"
# Verdict labels of the claim x passage sets, as the claim matrix names them.
SUPPORTED, CONTRADICTED, NOT_FOUND = "supported", "contradicted", "not_found"


def split_of(set_name: str, group: str) -> str:
    """dev or test, half and half, fixed forever by a hash of (set, group)."""
    digest = hashlib.sha256(f"{set_name}\x1f{group}".encode()).digest()
    return DEV if digest[0] % 2 == 0 else TEST


@dataclass(frozen=True)
class Item:
    """One human-labelled (question, reference, answer, passages) case.

    Texts the set does not have are "" or (). `label` is the human label as the set gives it,
    mapped to RAGScope's vocabulary where one exists (verdicts: SUPPORTED / CONTRADICTED /
    NOT_FOUND; binary sets: True / False; graded sets: a float, e.g. the mean of annotators);
    `raw_label` keeps the set's own word."""

    set: str
    item_id: str  # unique within the set
    group: str  # what decides the split: items of one group share a side
    question: str
    reference: str
    answer: str
    contexts: tuple[str, ...]
    label: object
    raw_label: str
    extra: tuple[tuple[str, object], ...] = ()  # further labels, e.g. (("answer_relevance", 3.3),)

    @property
    def split(self) -> str:
        return split_of(self.set, self.group)


# -- parts: short and long answers apart (the reference's length) ----------------------------------------------
SHORT, LONG, NO_REFERENCE = "reference ≤ 5 words", "reference > 5 words", "no reference"
SHORT_WORDS = 5
# EVOUNA's references are TriviaQA alias lists ("Take that/Take That!/TAKE THAT"): a short answer when one alias
# is. Elsewhere a "/" is text ("Mount Logan / ˈloʊɡən / is ..."), so only these sets are split at it.
ALIAS_LISTS = frozenset({"evouna"})
_PARENTHESES = re.compile(r"\([^)]*\)")  # "PRINCE WILLIAM (accept DUKE OF CAMBRIDGE)": a note to the grader


def reference_part(item: Item) -> str:
    """SHORT, LONG or NO_REFERENCE: the item's reference by its length in words (an alias list's shortest alias)."""
    if not item.reference.strip():
        return NO_REFERENCE
    aliases = item.reference.split("/") if item.set in ALIAS_LISTS else [item.reference]
    words = min(len(_PARENTHESES.sub(" ", a).split()) if item.set in ALIAS_LISTS else len(a.split()) for a in aliases)
    return SHORT if words <= SHORT_WORDS else LONG


# --- readers ---------------------------------------------------------------------------------------
# Each reader returns its set's items in the files' own order (files in sorted name order), texts
# stripped, item ids unique (asserted by `_finish`). Cached: the tuples are immutable and read often.


def _finish(set_name: str, items: list[Item]) -> tuple[Item, ...]:
    duplicates = sorted(i for i, n in Counter(item.item_id for item in items).items() if n > 1)
    assert not duplicates, f"{set_name}: item ids repeat: {duplicates[:5]}"
    return tuple(items)


def _strip(text: object) -> str:
    return "" if text is None else str(text).strip()


def _text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _lines(path: Path) -> list[str]:
    """The file's lines, split at line feeds only (str.splitlines would also split at the rarer
    separators, e.g. U+2028, inside a text), CRLF's carriage return removed, no empty last line."""
    lines = [line.removesuffix("\r") for line in path.read_text(encoding="utf-8").split("\n")]
    return lines[:-1] if lines and lines[-1] == "" else lines


def _jsonl(path: Path) -> list[tuple[int, dict]]:
    """(1-based line number, record) of every non-blank line."""
    return [(n, json.loads(line)) for n, line in enumerate(_lines(path), 1) if line.strip()]


def _linked_groups(keys: list[str], texts: list[tuple[str, ...]]) -> dict[str, str]:
    """key -> group key, where keys that share any text (transitively) share one group, named by the
    smallest key of the group. Deterministic: depends only on the data, not on the order."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a: str, b: str) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)  # the root is always the smallest member

    owner: dict[str, str] = {}
    for key, shared in zip(keys, texts):
        find(key)
        for text in shared:
            if text in owner:
                union(key, owner[text])
            else:
                owner[text] = key
    return {key: find(key) for key in keys}


EVOUNA_SYSTEMS = ("fid", "gpt35", "chatgpt", "gpt4", "newbing")

# evouna: 2,000 questions x 5 systems = 10,000 judgments; 9,925 read (8,331 correct, 1,594
# incorrect); 75 skipped: judge_<system> is the string "nan" (15 questions, every system), all on
# questions marked "improper".


@lru_cache(maxsize=None)
def evouna() -> tuple[Item, ...]:
    """EVOUNA TriviaQA (TQ.json): a QA system's answer vs the golden answer, judged by a person.

    Human label `judge_<system>` (true / false) -> label True / False, raw_label "correct" /
    "incorrect". One item per (question i, system): item_id "i:system", group = the question text.
    extra: ("improper", the file's own `improper` flag on the question, true for 62 questions)."""
    rows = json.loads((CALIBRATION / "evouna" / "TQ.json").read_text(encoding="utf-8"))
    items = []
    for i, row in enumerate(rows):
        question = _strip(row["question"])
        for system in EVOUNA_SYSTEMS:
            judged = row.get(f"judge_{system}")
            if not isinstance(judged, bool):  # "nan" (or missing): not judged
                continue
            items.append(Item(
                set="evouna", item_id=f"{i}:{system}", group=question, question=question,
                reference=_strip(row["golden_answer"]), answer=_strip(row.get(f"answer_{system}")),
                contexts=(), label=judged, raw_label="correct" if judged else "incorrect",
                extra=(("improper", bool(row.get("improper"))),)))
    return _finish("evouna", items)


SNLI_LABELS = {"entailment": SUPPORTED, "contradiction": CONTRADICTED, "neutral": NOT_FOUND}

# snli: 9,842 (dev file) + 9,824 (test file) = 19,666 pairs read, 0 skipped (e-SNLI's files already
# leave out the pairs without a gold label, "-").


@lru_cache(maxsize=None)
def snli() -> tuple[Item, ...]:
    """SNLI dev + test (e-SNLI's s1/s2/labels files): does the premise entail the hypothesis?

    Human label (the gold, majority of 5 annotators): entailment -> SUPPORTED, contradiction ->
    CONTRADICTED, neutral -> NOT_FOUND; any other ("-": no majority) is skipped. answer = the
    hypothesis, contexts = (premise,), group = the premise text (the 3 hypotheses written for one
    premise share a side). item_id "dev:<line>" / "test:<line>" (1-based) names SNLI's own file,
    which has nothing to do with RAGScope's split."""
    folder = CALIBRATION / "snli_dev_test"
    items = []
    for part in ("dev", "test"):
        premises, hypotheses, labels = (_lines(folder / f"{stem}.{part}") for stem in ("s1", "s2", "labels"))
        assert len(premises) == len(hypotheses) == len(labels), f"snli {part}: files not line-aligned"
        for line, (premise, hypothesis, raw) in enumerate(zip(premises, hypotheses, labels), 1):
            raw = raw.strip()
            if raw not in SNLI_LABELS:
                continue
            premise = premise.strip()
            items.append(Item(
                set="snli", item_id=f"{part}:{line}", group=premise, question="", reference="",
                answer=hypothesis.strip(), contexts=(premise,), label=SNLI_LABELS[raw], raw_label=raw))
    return _finish("snli", items)


FM2_LABELS = {"SUPPORTS": SUPPORTED, "REFUTES": CONTRADICTED}

# fool_me_twice: 1,169 (dev.jsonl) + 1,380 (test.jsonl) = 2,549 claims read, 0 skipped (every claim
# has SUPPORTS / REFUTES and 1-2 gold evidence sentences).


@lru_cache(maxsize=None)
def fool_me_twice() -> tuple[Item, ...]:
    """Fool Me Twice (FM2) dev + test: a claim written by a person against Wikipedia evidence.

    Human label (the claim writer's, against the evidence): SUPPORTS -> SUPPORTED, REFUTES ->
    CONTRADICTED. answer = the claim, contexts = its gold evidence sentences (one chunk each),
    item_id = the claim id. group = the claim id, except that claims sharing a gold evidence sentence
    (several claims were written on one sentence) share one group, named by the smallest
    claim id among them: with the claim id alone, 255 of the 2,634 evidence sentences would sit on
    both sides of the split."""
    rows = [row for part in ("dev", "test")
            for _, row in _jsonl(CALIBRATION / "fool_me_twice" / f"{part}.jsonl")]
    rows = [row for row in rows if row.get("label") in FM2_LABELS]
    evidence = [tuple(_strip(e["text"]) for e in row.get("gold_evidence") or () if _strip(e.get("text")))
                for row in rows]
    groups = _linked_groups([_strip(row["id"]) for row in rows], evidence)
    items = [Item(
        set="fool_me_twice", item_id=_strip(row["id"]), group=groups[_strip(row["id"])], question="",
        reference="", answer=_strip(row["text"]), contexts=texts, label=FM2_LABELS[row["label"]],
        raw_label=row["label"]) for row, texts in zip(rows, evidence)]
    return _finish("fool_me_twice", items)


PARTIAL = "partial"
FACTCHECK_LABELS = {"completely-support": SUPPORTED, "refute": CONTRADICTED, "irrelevant": NOT_FOUND,
                    "partially-support": PARTIAL}

# factcheck_stance: 3,305 (claim, evidence) pairs read, 0 skipped. Stances: irrelevant 2,057,
# completely-support 696, partially-support 391, refute 161. 179 (claim, evidence) pairs occur more
# than once (7 of them with two different stances); every line is kept.


@lru_cache(maxsize=None)
def factcheck_stance() -> tuple[Item, ...]:
    """Factcheck-GPT subtask 3: the stance of an evidence passage toward a claim, labelled by people.

    Human label (stance): completely-support -> SUPPORTED, refute -> CONTRADICTED, irrelevant ->
    NOT_FOUND, partially-support -> PARTIAL ("partial", its own label; the bench decides how to
    score it). answer = the claim, contexts = (evidence,), item_id = the 1-based line number.
    group = the claim text, except that claims sharing an evidence passage (one retrieved passage
    was often judged against several claims) share one group, named by the smallest
    claim text among them: with the claim text alone, 224 of the 2,386 passages would sit on both
    sides of the split."""
    path = CALIBRATION / "factcheck_gpt_stance" / "claim_evidence_stance.jsonl"
    rows = [(line, row) for line, row in _jsonl(path) if _strip(row.get("stance")) in FACTCHECK_LABELS]
    claims = [_strip(row["claim"]) for _, row in rows]
    groups = _linked_groups(claims, [(_strip(row["evidence"]),) for _, row in rows])
    items = [Item(
        set="factcheck_stance", item_id=str(line), group=groups[claim], question="", reference="",
        answer=claim, contexts=(_strip(row["evidence"]),), label=FACTCHECK_LABELS[_strip(row["stance"])],
        raw_label=_strip(row["stance"])) for (line, row), claim in zip(rows, claims)]
    return _finish("factcheck_stance", items)


BEGIN_LABELS = {"Fully attributable": True, "Not fully attributable": False, "Generic": False}
BEGIN_COLUMNS = ["model_name", "data_source", "knowledge", "message", "response", "begin_label"]

# begin: 416 (begin_dev_cmu) + 430 (begin_dev_wow) + 3,607 (begin_test_wow) = 4,453 rows read,
# 0 skipped. Fully attributable 1,631, Not fully attributable 2,737, Generic 85.


@lru_cache(maxsize=None)
def begin() -> tuple[Item, ...]:
    """BEGIN (all three TSVs): is a dialogue response attributable to its knowledge passage?

    Human label (begin_label): "Fully attributable" -> True; "Not fully attributable" and "Generic"
    (a response that says nothing checkable) -> False; raw_label keeps which. question = the
    dialogue turn answered (message; empty in 2 CMU rows), answer = response, contexts =
    (knowledge,), group = the knowledge text. item_id "<file stem>:<row>", row 1-based after the
    header. The files are read as plain tab-separated lines: quote marks are text, not quoting."""
    items = []
    for path in sorted((CALIBRATION / "begin").glob("*.tsv")):
        lines = _lines(path)
        header = lines[0].split("\t")
        assert [h.strip() for h in header] == BEGIN_COLUMNS, f"{path.name}: columns {header}"
        for row, line in enumerate(lines[1:], 1):
            if not line.strip():
                continue
            fields = dict(zip(BEGIN_COLUMNS, (f.strip() for f in line.split("\t"))))
            raw = fields.get("begin_label", "")
            if raw not in BEGIN_LABELS:
                continue
            knowledge = fields["knowledge"]
            items.append(Item(
                set="begin", item_id=f"{path.stem}:{row}", group=knowledge, question=fields["message"],
                reference="", answer=fields["response"], contexts=(knowledge,), label=BEGIN_LABELS[raw],
                raw_label=raw, extra=(("model", fields["model_name"]), ("source", fields["data_source"]))))
    return _finish("begin", items)


# summedits: 4,681 summaries of 162 documents in 8 domains read (1,648 consistent, 3,033
# inconsistent), 0 skipped (every label is 0 or 1). Ids do not repeat across files.


@lru_cache(maxsize=None)
def summedits() -> tuple[Item, ...]:
    """SummEdits (8 domains): is a (possibly minimally edited) summary consistent with its document?

    Human label (label): 1 -> True (consistent), 0 -> False; anything else is skipped. answer = the
    summary, contexts = (document,), item_id = the file's id, group = "doc:" + a hash of the document
    text (all summaries of one document share a side). extra: ("domain", e.g. "news"), ("edit_types",
    the edits made, () for an unedited summary)."""
    items = []
    for path in sorted((CALIBRATION / "summedits").glob("summedits_*.json")):
        domain = path.stem.removeprefix("summedits_")
        for row in json.loads(path.read_text(encoding="utf-8")):
            label = row.get("label")
            if isinstance(label, bool) or label not in (0, 1):
                continue
            doc = _strip(row["doc"])
            items.append(Item(
                set="summedits", item_id=_strip(row["id"]), group=f"doc:{_text_hash(doc)}", question="",
                reference="", answer=_strip(row["summary"]), contexts=(doc,), label=label == 1,
                raw_label=str(label),
                extra=(("domain", domain), ("edit_types", tuple(row.get("edit_types") or ())))))
    return _finish("summedits", items)


def _ratings(scores: dict, metric: str) -> tuple[int, ...]:
    """The human ratings of one metric, in annotator-id order."""
    by_annotator = scores.get(metric) or {}
    return tuple(int(by_annotator[a]["value"]) for a in sorted(by_annotator, key=lambda a: (len(a), a))
                 if _strip(by_annotator[a].get("value")))


def _mean(values: tuple[int, ...]) -> float:
    return sum(values) / len(values)


# inspectorraget: 400 results (100 tasks x gpt / llama / mistral / target) -> 300 items read; the
# 100 "target" results (the reference answer, also rated) are left out; 0 skipped for want of a
# rating (every result has 3 faithfulness, answer relevance and fluency ratings).


@lru_cache(maxsize=None)
def inspectorraget() -> tuple[Item, ...]:
    """InspectorRAGet on ClapNQ: three models' RAG answers, each rated by 3 people (1-4).

    Human label: the mean of the 3 faithfulness ratings (1 No, 2 Mostly no, 3 Mostly yes, 4 Yes),
    a float; raw_label the ratings joined ("4,3,4"). One item per result of gpt / llama / mistral
    (not "target", the reference): item_id "task_id:model", group = task_id, question = the task's
    last user turn, reference = its target ("" when unanswerable), contexts = its passages.
    extra: answer_relevance and fluency (means), answerable (the task's answerability), and the
    faithfulness / answer_relevance ratings in annotator-id order."""
    path = DATA / "inspectorraget_clapnq" / "rag_model_performance.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    tasks = {task["task_id"]: task for task in data["tasks"]}
    items = []
    for result in data["results"]:
        if result["model_id"] == "target":
            continue
        scores = result.get("scores") or {}
        faithfulness = _ratings(scores, "faithfulness")
        if not faithfulness:
            continue
        relevance, fluency = _ratings(scores, "answer_relevance"), _ratings(scores, "fluency")
        task = tasks[result["task_id"]]
        user_turns = [turn for turn in task.get("input") or () if turn.get("speaker") == "user"]
        targets = task.get("targets") or ()
        items.append(Item(
            set="inspectorraget", item_id=f"{task['task_id']}:{result['model_id']}", group=task["task_id"],
            question=_strip(user_turns[-1]["text"]) if user_turns else "",
            reference=_strip(targets[0].get("value")) if targets else "",
            answer=_strip(result["output"][0]["content"]) if result.get("output") else "",
            contexts=tuple(_strip(c["text"]) for c in task.get("contexts") or ()),
            label=_mean(faithfulness), raw_label=",".join(map(str, faithfulness)),
            extra=(("answer_relevance", _mean(relevance) if relevance else None),
                   ("fluency", _mean(fluency) if fluency else None),
                   ("answerable", task.get("answerability") == "ANSWERABLE"),
                   ("faithfulness_ratings", faithfulness),
                   ("answer_relevance_ratings", relevance))))
    return _finish("inspectorraget", items)


# clapnq: 300 answerable + 300 unanswerable questions read, 0 skipped (each has one passage; every
# answerable one has a non-empty first answer). 4 passages serve two questions each.


@lru_cache(maxsize=None)
def clapnq() -> tuple[Item, ...]:
    """CLAPnq dev: does the passage hold the answer to the question?

    Human label: the file an annotated question is in, answerable -> True, unanswerable -> False.
    question = input, contexts = its passages, reference = answer = the first human long answer
    (output[0]["answer"]; "" when unanswerable). item_id = the question id; group = the question id,
    except that questions on the same passage share one group (the smallest id of them)."""
    rows = [(answerable, row) for part, answerable in (("answerable", True), ("unanswerable", False))
            for _, row in _jsonl(CALIBRATION / "clapnq_dev" / f"clapnq_dev_{part}.jsonl")]
    passages = [tuple(_strip(p["text"]) for p in row["passages"]) for _, row in rows]
    groups = _linked_groups([_strip(row["id"]) for _, row in rows], passages)
    items = []
    for (answerable, row), contexts in zip(rows, passages):
        answer = _strip((row.get("output") or [{}])[0].get("answer")) if answerable else ""
        item_id = _strip(row["id"])
        items.append(Item(
            set="clapnq", item_id=item_id, group=groups[item_id], question=_strip(row["input"]),
            reference=answer, answer=answer, contexts=contexts, label=answerable,
            raw_label="answerable" if answerable else "unanswerable"))
    return _finish("clapnq", items)


# squad2: dev-v2.0.json: 6,078 questions read (2,910 answerable, 3,168 unanswerable) on 646
# paragraphs. test-v2.0.json: all 5,915 questions skipped: that file has no is_impossible and every
# answers list is empty (its labels are held back upstream), so no human label.


@lru_cache(maxsize=None)
def squad2() -> tuple[Item, ...]:
    """SQuAD 2.0 (the labelled dev-v2.0.json half): can the question be answered from the paragraph?

    Human label: is_impossible false -> True (answerable), true -> False; a question without
    is_impossible is skipped. reference = answer = the first human answer ("" if none), contexts =
    (paragraph,), item_id = the qa id, group = "ctx:" + a hash of the paragraph (its questions share
    a side). extra: ("plausible_answer", the first plausible answer of an unanswerable question)."""
    items = []
    for part in ("dev", "test"):
        data = json.loads((CALIBRATION / "squad2_dev" / f"{part}-v2.0.json").read_text(encoding="utf-8"))
        for article in data["data"]:
            for paragraph in article["paragraphs"]:
                context = _strip(paragraph["context"])
                for qa in paragraph["qas"]:
                    impossible = qa.get("is_impossible")
                    if not isinstance(impossible, bool):
                        continue
                    answers = qa.get("answers") or ()
                    reference = _strip(answers[0]["text"]) if answers else ""
                    plausible = qa.get("plausible_answers") or ()
                    items.append(Item(
                        set="squad2", item_id=_strip(qa["id"]), group=f"ctx:{_text_hash(context)}",
                        question=_strip(qa["question"]), reference=reference, answer=reference,
                        contexts=(context,), label=not impossible,
                        raw_label="unanswerable" if impossible else "answerable",
                        extra=(("plausible_answer", _strip(plausible[0]["text"]) if plausible else ""),)))
    return _finish("squad2", items)


# squality: 20 stories x 5 questions x 3 responses (bart, bart-dpr, human) = 300 responses, each against the
# question's 3 references other than the human response's own = 900 items; 0 skipped (every response has
# 3 reviews and its story and question are in v1/test.jsonl).
SQUALITY_SYSTEMS = ("bart", "bart-dpr", "human")


@lru_cache(maxsize=None)
def squality() -> tuple[Item, ...]:
    """SQuALITY human evaluation: long-form answers to questions about a story, rated 0-100 by 3 reviewers.

    Human label: the mean correctness rating of the 3 reviewers (`overall.correctness-rating`), a float in
    0-100; raw_label the three ratings joined. One item per (response, reference): every response of a
    question is compared with the same 3 references, the question's 4 writers' responses in v1/test.jsonl less
    the one the `human` response is (so a human response is never its own reference). item_id
    "passage:question:system:reference uid", group = the question (its responses and references share a side;
    by story, the 20 stories would leave 6 on the test side). No contexts (the story is the document, not a retrieval). extra: coverage and overall (means of the
    `selection-rating` and `overall-rating`), response ("passage:question:system", what the 3 items of one
    response share), question_key ("passage:question"), system."""
    stories = {row["metadata"]["passage_id"]: row for _, row in _jsonl(CALIBRATION / "squality_human_eval" / "v1" / "test.jsonl")}
    items = []
    for _, row in _jsonl(CALIBRATION / "squality_human_eval" / "human-eval" / "all-responses.jsonl"):
        passage = row["passage-id"]
        story = stories[passage]
        for q, systems in sorted(row["questions"].items()):
            question = story["questions"][int(q)]
            human = _strip(systems["human"]["response"])
            references = [r for r in question["responses"] if _strip(r["response_text"]) != human]
            assert len(references) == 3, f"squality {passage}:{q}: the human response is not one of 4 references"
            for system in SQUALITY_SYSTEMS:
                response = systems[system]
                ratings = tuple(r["correctness-rating"] for r in response["reviews"])
                overall = response["overall"]
                for reference in references:
                    items.append(Item(
                        set="squality", item_id=f"{passage}:{q}:{system}:{reference['uid']}", group=f"{passage}:{q}",
                        question=_strip(question["question_text"]), reference=_strip(reference["response_text"]),
                        answer=_strip(response["response"]), contexts=(), label=float(overall["correctness-rating"]),
                        raw_label=",".join(f"{r:g}" for r in ratings),
                        extra=(("coverage", float(overall["selection-rating"])),
                               ("overall", float(overall["overall-rating"])),
                               ("response", f"{passage}:{q}:{system}"), ("question_key", f"{passage}:{q}"),
                               ("system", system))))
    return _finish("squality", items)


# haluquestqa: 698 questions x 2 answers (a Reddit answer and GPT-4's) = 1,396 items, 0 skipped; 347 pairs
# prefer answer 1, 351 answer 2. No question appears twice.


@lru_cache(maxsize=None)
def haluquestqa() -> tuple[Item, ...]:
    """HaluQuestQA: two long-form answers to an ELI5 question, with experts' error spans and preference.

    Human label: the experts prefer this answer of the two (True / False); raw_label "preferred" /
    "rejected". One item per answer: item_id "row:1" / "row:2" (the file's index column and the answer's
    number), group = the row (both answers share a side). No reference, no contexts. extra: factuality,
    completeness and relevance (upstream's scores from the experts' spans, 1 - flagged sentences / sentences,
    for this answer's author), author ("human" or "model": who wrote the answer, not who judged it), pair
    (the row), category."""
    import csv  # one reader only: the other sets are JSON
    csv.field_size_limit(1 << 30)
    path = CALIBRATION / "haluquestqa" / "HaluQuestQA.csv"
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    items = []
    for row in rows:
        index = _strip(row[""])
        preferred = {"Answer 1": "1", "Answer 2": "2"}[_strip(row["ans_preference"])]
        for n in ("1", "2"):
            author = {"human_answer": "human", "model_answer": "model"}[_strip(row[f"ans{n}_label"])]
            items.append(Item(
                set="haluquestqa", item_id=f"{index}:{n}", group=index, question=_strip(row["question_text"]),
                reference="", answer=_strip(row[f"ans{n}_text"]), contexts=(), label=n == preferred,
                raw_label="preferred" if n == preferred else "rejected",
                extra=tuple((aspect, float(row[f"{aspect}_{author}_score"]))
                            for aspect in ("factuality", "completeness", "relevance"))
                + (("author", author), ("pair", index), ("category", _strip(row["category"])))))
    return _finish("haluquestqa", items)


# alce_eli5: 4 systems x 100 ELI5 questions = 400 answers read; each system's "overall_results" entry is
# not an answer (no utility_score) and is skipped.


@lru_cache(maxsize=None)
def alce_eli5() -> tuple[Item, ...]:
    """ALCE human evaluation, ELI5 half: retrieval-augmented long-form answers rated 1-5 for usefulness.

    Human label: `utility_score` (1-5, one person), a float. One item per (system, question): item_id
    "question id:system n" (n = the system file's position, 0-3), group = the question id (its 4 answers
    share a side). No reference and no contexts (the repository has neither). extra: system (the file)."""
    data = json.loads((CALIBRATION / "alce_eli5_human_eval" / "human_eval_utility_completed_eli5.json")
                      .read_text(encoding="utf-8"))["eli5"]
    items = []
    for n, (system, answers) in enumerate(data.items()):
        for key, row in answers.items():
            if not isinstance(row, dict) or row.get("utility_score") is None:
                continue
            items.append(Item(
                set="alce_eli5", item_id=f"{key}:{n}", group=key, question=_strip(row["question"]), reference="",
                answer=_strip(row["output"]), contexts=(), label=float(row["utility_score"]),
                raw_label=str(row["utility_score"]), extra=(("system", system),)))
    return _finish("alce_eli5", items)


SETS: dict[str, Callable[[], tuple[Item, ...]]] = {
    "evouna": evouna,
    "snli": snli,
    "fool_me_twice": fool_me_twice,
    "factcheck_stance": factcheck_stance,
    "begin": begin,
    "summedits": summedits,
    "inspectorraget": inspectorraget,
    "clapnq": clapnq,
    "squad2": squad2,
    "squality": squality,
    "haluquestqa": haluquestqa,
    "alce_eli5": alce_eli5,
}


def load(name: str, split: str | None = None) -> tuple[Item, ...]:
    """The items of set `name` (a key of SETS): all of them, or those of `split` ("dev" / "test")."""
    if name not in SETS:
        raise KeyError(f"unknown set {name!r}; known: {', '.join(SETS)}")
    if split not in (None, DEV, TEST):
        raise ValueError(f"split must be None, {DEV!r} or {TEST!r}, not {split!r}")
    items = SETS[name]()
    return items if split is None else tuple(item for item in items if item.split == split)


def subsample(items: Sequence[Item], max_items: int) -> list[Item]:
    """At most `max_items`, chosen by a hash of the item id (fixed, whole groups not needed here)."""
    if len(items) <= max_items:
        return list(items)
    ranked = sorted(items, key=lambda i: hashlib.sha256(i.item_id.encode()).hexdigest())
    return sorted(ranked[:max_items], key=lambda i: i.item_id)
