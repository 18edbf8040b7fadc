"""Evaluate's "Your criteria": the analyst's own criteria for the next run, from an uploaded criteria file (JSON,
TOML or YAML: evaluators.loaders.criteria) or a small form, listed with a remove button; every problem shown with
its file, criterion and field. They live in this session only until a run stores them. Their text is the
analyst's: it is shown through st.text / st.dataframe or escaped, never as markdown or HTML."""
from __future__ import annotations

import streamlit as st

from evaluators.api import read_criteria
from evaluators.loaders.criteria import criterion_problems
from evaluators.metrics import REGISTRY
from evaluators.metrics.criteria import NEEDS_LLM
from evaluators.records import LoadError, Problem
from evaluators.records.criteria import INPUTS, MAX_CRITERIA, SCALES, Criterion
from ui.common import md_escape
from ui.problems import show_problems

CHOSEN = "eval-criteria"  # id -> Criterion, in the order added
PROBLEMS = "eval-criteria-problems"  # the last upload's or form's problems
SEEN = "eval-criteria-file-seen"  # the upload already read (a page run must not add it again)
FORM = "the form"  # what a form's problems name as their file
FIELDS = ("id", "name", "criterion", "scale", "inputs", "higher_is_better")  # the form's widgets: eval-criterion-<f>
EXAMPLES = 2  # few-shot example slots on the form (a file may give up to MAX_EXAMPLES)


def chosen() -> tuple[Criterion, ...]:
    return tuple(st.session_state.get(CHOSEN, {}).values())


def _add(criteria: tuple[Criterion, ...]) -> None:
    """Into the list, a criterion of an id already there replacing it (a file read again after an edit)."""
    mine = st.session_state.setdefault(CHOSEN, {})
    for c in criteria:
        mine[c.id] = c


def _remove(criterion_id: str) -> None:
    st.session_state.get(CHOSEN, {}).pop(criterion_id, None)


def _read_upload(upload) -> None:
    """The uploaded file's criteria into the list, once per upload; or its problems, nothing added."""
    if upload is None or st.session_state.get(SEEN) == upload.file_id:
        return
    st.session_state[SEEN] = upload.file_id
    try:
        _add(read_criteria(upload.getvalue(), name=upload.name))
    except LoadError as exc:
        st.session_state[PROBLEMS] = list(exc.problems)
    else:
        st.session_state[PROBLEMS] = []


def _submit() -> None:
    """The form's criterion into the list, or its problems (the form keeps what was typed)."""
    state = st.session_state
    data = {f: state.get(f"eval-criterion-{f}") for f in FIELDS}
    data["id"] = (data["id"] or "").strip()
    data["name"] = (data["name"] or "").strip() or None
    data["levels"] = {str(k): text.strip() for k in range(1, 6) if (text := state.get(f"eval-criterion-level-{k}"))
                      and text.strip()} if data["scale"] == "1-5" else {}
    data["examples"] = [e for k in range(1, EXAMPLES + 1) if (e := _example(k)) is not None]
    found = criterion_problems(data, REGISTRY, f"criterion {data['id']!r}")
    if data["id"] in state.get(CHOSEN, {}):
        found.append(("id", f"criterion {data['id']!r} is in the list already: remove it first, or give another id"))
    state[PROBLEMS] = [Problem(FORM, None, field, message) for field, message in found]
    if not found:
        _add((Criterion.of_definition(data),))


def _example(k: int) -> dict | None:
    """Example slot k as a criteria file writes one (None when its answer is empty); a score that is no number is
    passed on as typed, for the check to name."""
    def field(name: str) -> str:
        return (st.session_state.get(f"eval-criterion-example-{k}-{name}") or "").strip()

    if not field("answer"):
        return None
    inputs = {"question": field("question")} if field("question") else {}
    try:
        score = float(field("score"))
        score = int(score) if score.is_integer() else score  # 4, as a file writes it: the same version
    except ValueError:
        score = field("score")
    return {"inputs": inputs | {"answer": field("answer")}, "score": score, "reason": field("reason")}


def _form() -> None:
    with st.form("eval-criterion-form"):
        left, right = st.columns(2)
        left.text_input("Id (becomes the metric's id)", key="eval-criterion-id", placeholder="names_the_source",
                        help="Lowercase letters, digits and underscores, starting with a letter; not a built-in "
                             "metric's id.")
        right.text_input("Name (optional)", key="eval-criterion-name")
        st.text_area("Criterion", key="eval-criterion-criterion",
                     placeholder="The answer says which passage its main claim comes from.",
                     help="What a good answer does, as a rule a judge can apply.")
        left, right = st.columns(2)
        left.selectbox("Scale", list(SCALES), key="eval-criterion-scale")
        right.multiselect("Inputs the judge sees", list(INPUTS), default=["question", "answer"],
                          key="eval-criterion-inputs")
        st.checkbox("Higher is better", value=True, key="eval-criterion-higher_is_better")
        with st.expander("Levels (1-5 scale only, optional): what each score means"):
            for k in range(1, 6):
                st.text_input(f"Level {k}", key=f"eval-criterion-level-{k}")
        with st.expander("Examples (optional): answers scored as you would score them, shown to the judge"):
            for k in range(1, EXAMPLES + 1):
                left, right = st.columns([3, 1])
                left.text_input(f"Example {k}: question (when the judge sees it)",
                                key=f"eval-criterion-example-{k}-question")
                left.text_area(f"Example {k}: answer", key=f"eval-criterion-example-{k}-answer", height=80)
                right.text_input(f"Example {k}: score", key=f"eval-criterion-example-{k}-score",
                                 help="On the criterion's scale: 1-5, 0 or 1 for pass/fail, 0-1.")
                right.text_input(f"Example {k}: why", key=f"eval-criterion-example-{k}-reason")
        st.form_submit_button("Add the criterion", on_click=_submit)


def _listed(criteria: tuple[Criterion, ...]) -> None:
    st.dataframe([{"id": c.id, "name": c.name or "", "scale": c.scale, "inputs": ", ".join(c.inputs),
                   "higher is better": c.higher_is_better, "levels": len(c.levels), "examples": len(c.examples),
                   "version": c.version, "criterion": c.criterion} for c in criteria],
                 hide_index=True, width="stretch")  # st.dataframe: cells shown as written
    cols = st.columns(min(len(criteria), 4))
    for i, c in enumerate(criteria):
        cols[i % len(cols)].button(f"Remove {md_escape(c.id)}", key=f"eval-criteria-remove-{c.id}",
                                   on_click=_remove, args=(c.id,))


def your_criteria(judge_kind) -> tuple[Criterion, ...]:
    """The section; the criteria chosen for the run. `judge_kind`: the judge class chosen (whether it can score
    them)."""
    st.subheader("Your criteria")
    st.caption(f"Rubrics of your own, each a metric of the run (at most {MAX_CRITERIA}): an id, the criterion, a "
               "scale (1-5, pass/fail or 0-1) and the inputs the judge sees. Upload a criteria file (README, \"Your "
               "own criteria\") or add one below. A changed text is a new version: runs compare a criterion only at "
               "equal versions.")
    _read_upload(st.file_uploader("Criteria file (JSON, TOML or YAML)", type=["json", "toml", "yaml", "yml"],
                                  key="eval-criteria-file"))
    with st.expander("Add a criterion", expanded=not chosen()):
        _form()
    if problems := st.session_state.get(PROBLEMS):
        st.error(f"{len(problems)} problem{'s' if len(problems) != 1 else ''}: nothing was added.")
        show_problems(problems, "eval-criteria-problems")
    criteria = chosen()
    if criteria:
        _listed(criteria)
        if not judge_kind.judges_criteria:
            st.info(md_escape(f"With the {judge_kind.name} judge these criteria are not applicable: "
                              f"{NEEDS_LLM.format(judge=judge_kind.name)}. Choose an LLM judge below to score them."))
    return criteria
