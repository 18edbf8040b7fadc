"""Write data/calibration/: the human-labelled items RAGScope ships, on which `judge calibrate` measures a judge.

    .venv/bin/python -m calibration.ship          # rebuilds data/calibration from ../shared/data (calibration/sets.py)

Only TEST-split items (calibration/sets.split_of) of permissively licensed sets (Apache-2.0, MIT, CC BY 4.0; never a
CC BY-SA one), so nothing shipped was ever used to fit anything: fitting uses the dev parts of ../shared/data only.
Each set is cut down deterministically to at most CAP items by whole groups (ranked by a hash of the group), so the
answers to one question stay together (the bootstrap resamples groups) and the folder stays a few hundred KB.

Per set, data/calibration/<set>/: items.jsonl (item_id, group, question, reference, answer, contexts, label, part),
the set's licence and notice files as upstream has them, and SOURCE.md (upstream, commit, licence, what was chosen and
how, the command that rebuilt it). data/calibration/sets.json lists the sets: which human label each measures
(correctness, faithfulness, relevance), its kind (binary or graded) and its scale.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from calibration import sets
from calibration.sets import CALIBRATION, SUPPORTED, TEST, Item

OUT = Path(__file__).resolve().parents[1] / "data" / "calibration"
CAP = 300  # items per set at most
COMMAND = ".venv/bin/python -m calibration.ship"


@dataclass(frozen=True)
class Shipped:
    """One set as shipped: where it comes from, which label it measures, and how its items are chosen."""

    name: str  # the set's name in calibration/sets.py
    folder: str  # its folder in ../shared/data/calibration
    upstream: str
    commit: str
    licence: str
    licence_files: tuple[str, ...]
    label: str  # correctness | faithfulness | relevance
    kind: str  # binary | graded
    label_text: str  # what people said, for the tables
    scale: tuple[float, float] | None  # a graded label's range
    selection: str  # what was chosen and how (SOURCE.md)
    keep: Callable[[Item], bool] = lambda i: True
    truth: Callable[[Item], object] = lambda i: i.label
    dedupe: Callable[[Item], str] | None = None  # several items of one answer: keep the one ranked first


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


SHIPPED = (
    Shipped("evouna", "evouna", "https://github.com/wangcunxiang/QA-Eval", "90007d39d4ef0720984f80d56a586c66d6241e70",
            "Apache-2.0", ("LICENSE",), "correctness", "binary",
            "people: the answer is correct (vs the gold answer)", None,
            "EVOUNA TriviaQA: five QA systems' short answers vs the gold answer (an alias list), judged correct or "
            "not by people. Questions upstream marks improper are left out.",
            keep=lambda i: not dict(i.extra)["improper"]),
    Shipped("squality", "squality_human_eval", "https://github.com/nyu-mll/SQuALITY",
            "dc08d4f574639d773bc64ef3ab3527043108fb4e", "CC BY 4.0", ("LICENSE",), "correctness", "graded",
            "people: correctness 0-100 (mean of 3 reviewers)", (0.0, 100.0),
            "SQuALITY human evaluation: long answers (bart, bart-dpr, human) to questions about a story, rated for "
            "correctness by 3 reviewers. Shipped: the question, ONE reference per response (of the question's 3 "
            "other writers' responses, the one ranked first by a hash of the item id) and the response; the "
            "stories are NOT shipped (the judge sees question, reference and answer only).",
            dedupe=lambda i: dict(i.extra)["response"]),
    Shipped("begin", "begin", "https://github.com/google/BEGIN-dataset", "6e65f0d5a1ed1b9574643a7640ff1678d4e979b5",
            "CC BY 4.0", ("wow_LICENSE", "wow_NOTICE"), "faithfulness", "binary",
            "people: the response is fully attributable to the passage", None,
            "BEGIN, Wizard of Wikipedia part only (the CMU-DoG rows are left out): a dialogue response vs its "
            "knowledge passage, labelled fully attributable (True) or not / generic (False).",
            keep=lambda i: dict(i.extra)["source"] == "wow"),
    Shipped("factcheck_stance", "factcheck_gpt_stance", "https://github.com/yuxiaw/Factcheck-GPT",
            "a9e6a04a953ad880806529c504a679dd1ad06528", "Apache-2.0", ("LICENSE",), "faithfulness", "binary",
            "people: the evidence supports the claim (vs refutes or is irrelevant)", None,
            "Factcheck-GPT subtask 3: a claim vs an evidence passage; label True where people said "
            "completely-support, False for refute or irrelevant; partially-support left out.",
            keep=lambda i: i.label != sets.PARTIAL, truth=lambda i: i.label == SUPPORTED),
    Shipped("alce_eli5", "alce_eli5_human_eval", "https://github.com/princeton-nlp/ALCE",
            "246c476a4edfc564266b7346b6e29ef4861ae937", "MIT", ("LICENSE",), "relevance", "graded",
            "people: usefulness 1-5", (1.0, 5.0),
            "ALCE human evaluation, ELI5 half: four systems' long answers to ELI5 questions, rated 1-5 for "
            "usefulness by one person (no reference, no passages)."),
)


def chosen(spec: Shipped, items: Sequence[Item], cap: int = CAP) -> list[Item]:
    """The test items of a set that are shipped: kept, one per answer (`dedupe`), then whole groups in the order of
    a hash of (set, group) until `cap` items; in the set's own order."""
    items = [i for i in items if i.split == TEST and spec.keep(i)]
    if spec.dedupe is not None:
        first: dict[str, Item] = {}
        for i in sorted(items, key=lambda i: _hash(i.item_id)):
            first.setdefault(spec.dedupe(i), i)
        items = [i for i in items if first[spec.dedupe(i)] is i]
    by_group: dict[str, list[Item]] = {}
    for i in items:
        by_group.setdefault(i.group, []).append(i)
    kept: set[str] = set()
    for group in sorted(by_group, key=lambda g: _hash(f"{spec.name}\x1f{g}")):
        if len(kept) + len(by_group[group]) > cap:
            break
        kept.update(i.item_id for i in by_group[group])
    return [i for i in items if i.item_id in kept]


def row(spec: Shipped, item: Item) -> dict:
    truth = spec.truth(item)
    return {"item_id": item.item_id, "group": item.group, "question": item.question, "reference": item.reference,
            "answer": item.answer, "contexts": list(item.contexts),
            "label": bool(truth) if spec.kind == "binary" else float(truth), "raw_label": item.raw_label,
            "part": sets.reference_part(item)}


def source_md(spec: Shipped, items: Sequence[Item], of: int) -> str:
    positives = sum(bool(spec.truth(i)) for i in items) if spec.kind == "binary" else None
    counts = f"{len(items)} items in {len({i.group for i in items})} groups"
    if positives is not None:
        counts += f" ({positives} labelled True, {len(items) - positives} False)"
    return "\n".join([
        f"# data/calibration/{spec.name}", "",
        f"- Upstream: {spec.upstream}, commit `{spec.commit}`.",
        f"- Licence: {spec.licence} ({', '.join(f'`{f}`' for f in spec.licence_files)}, copied unchanged).",
        f"- What: {spec.selection}",
        f"- Human label: {spec.label_text}; measures a judge's **{spec.label}** ({spec.kind}).",
        f"- Chosen: the TEST part only (calibration/sets.py `split_of`, a fixed hash of set and group) of {of} "
        f"items, then whole groups in the order of a hash of (set, group) up to {CAP} items: {counts}.",
        "- **Test part only; never used to fit anything.** Fitting and tuning use the dev parts of ../shared/data.",
        f"- Rebuilt with: `{COMMAND}` (reads ../shared/data/calibration through calibration/sets.py).", ""])


def ship(out: Path = OUT) -> dict[str, int]:
    """Write every set into `out` (replacing what was there); the number of items per set."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    manifest, counts = {}, {}
    for spec in SHIPPED:
        items = chosen(spec, sets.load(spec.name))
        folder = out / spec.name
        folder.mkdir()
        with (folder / "items.jsonl").open("w", encoding="utf-8", newline="\n") as f:
            for item in items:
                f.write(json.dumps(row(spec, item), ensure_ascii=False) + "\n")
        for name in spec.licence_files:
            shutil.copyfile(CALIBRATION / spec.folder / name, folder / name)
        of = len([i for i in sets.load(spec.name) if i.split == TEST])
        (folder / "SOURCE.md").write_text(source_md(spec, items, of), encoding="utf-8")
        manifest[spec.name] = {"label": spec.label, "kind": spec.kind, "label_text": spec.label_text,
                               "scale": list(spec.scale) if spec.scale else None, "licence": spec.licence,
                               "upstream": spec.upstream, "commit": spec.commit, "n_items": len(items)}
        counts[spec.name] = len(items)
    (out / "sets.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return counts


if __name__ == "__main__":
    for name, n in ship().items():
        print(f"{name}: {n} items")
    print(f"wrote {OUT}", file=sys.stderr)
