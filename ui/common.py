"""What every page needs: the store and run in view, empty states, exports, the formula panel."""
from __future__ import annotations

import functools
import io
import re

import pandas as pd
import streamlit as st

from evaluators import queries
from evaluators.presentation import csv_export, report
from evaluators.queries import versions
from evaluators.runs import sampling
from evaluators.judges import agreement, prices
from evaluators.metrics.registry import find
from evaluators.records.run_status import RunStatus
from evaluators.runs.runner import RunManager
from evaluators.store import Store

POLL_SECONDS = 2  # how often an empty page of a run being computed looks whether it has finished


def md_escape(text: str) -> str:
    """`text` for st.caption / st.markdown shown as written: markdown's special characters escaped,
    so a run or model name cannot become a link, emphasis or an image."""
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|<>~$:])", r"\\\1", str(text))


def _through_app() -> None:
    """A page opened before app.py ever ran on this server (a deep link right after a start: Streamlit
    then serves pages/ as standalone scripts) goes through app.py, which sets up the session."""
    if "store" not in st.session_state:
        st.switch_page("app.py")


def store() -> Store:
    _through_app()
    return st.session_state["store"]


@st.cache_resource(show_spinner=False)
def run_manager() -> RunManager:
    """The process's background runs (Evaluate's and the demo build's), shared by every session."""
    return RunManager()


def current_run() -> dict:
    """The run picked in the sidebar; without one, say what to do next and stop the page."""
    _through_app()
    run_id = st.session_state.get("run_id")
    run = store().run(run_id) if run_id else None
    if run is None:
        st.info("No run yet. Upload a golden set and RAG outputs on **Data**, then start one on **Evaluate**.")
        st.stop()
    versions.know(store(), run_id)  # the users' metrics (criteria, plug-ins') of the runs a page reads
    return run


def run_cost_caption(run_id: str) -> None:
    """The money line of a run judged by an LLM: its calls' cost at the prices recorded with it (cached
    replies cost nothing), or why there is no amount. None for the offline judge: it costs nothing."""
    spent = queries.run_cost(store(), run_id)
    if spent is not None:
        text = prices.spent_text(spent["usd"], spent["price"], spent["model"], spent["recorded"])
        if spent["cached_input_tokens"]:
            text += (f"; {spent['cached_input_tokens']:,} of {spent['input_tokens']:,} input tokens from the server's "
                     "prompt cache")
        st.caption(md_escape(text))


def open_question(question_id: str, run_id: str | None = None) -> None:
    """Drill down: show `question_id` on the Claims screen (it reads st.session_state["question_id"]), in run
    `run_id` when given (a side of another run: the run in view becomes that run)."""
    st.session_state["question_id"] = question_id
    if run_id is not None:
        st.session_state["run_id"] = run_id
    st.switch_page("pages/claims.py")


def open_questions(question_ids: list[str], title: str, run_id: str) -> None:
    """Drill down to a set of questions: the Claims screen lists only these (of run `run_id`), first one shown, with
    `title` saying where they come from, until the user asks for every question."""
    st.session_state["claims-only"] = {"ids": list(question_ids), "title": title, "run_id": run_id}
    open_question(question_ids[0])


def run_line(run: dict) -> str:
    """The run in view, as every screen names it: name, judge and, for a sampled run, "sample of N of M questions"
    (its means, CIs and n are the sample's)."""
    note = sampling.run_note(run)
    return (f"{run['name']} · judge {run['judge']}" + (f" ({run['judge_model']})" if run["judge_model"] else "")
            + (f" · {note}" if note else ""))


def run_header(title: str, run: dict) -> None:
    """A screen's title and the run in view (escaped: its name is typed by users)."""
    st.title(title)
    st.caption(md_escape(run_line(run)))


def stop_without_scores(run: dict) -> None:
    """The empty state of a run that has no scores yet: say what to do next and stop the page. A run being
    computed (or queued, as the demo runs of a first start are) redraws the page once its status changes."""
    if run["status"] == RunStatus.QUEUED or run_manager().is_running(run["run_id"]):
        st.info(f"This run is being computed in the background (status: {run['status']}); its scores show here "
                "when it has finished. Follow its progress on **Evaluate**.")
        st.fragment(run_every=POLL_SECONDS)(_rerun_when_status_changes)(run["run_id"], run["status"])
    else:
        st.info(f"This run has no scores yet (status: {run['status']}). Follow it, resume it or re-run its failed "
                "cells on **Evaluate**.")
    st.stop()


def _rerun_when_status_changes(run_id: str, status: str) -> None:
    current = store().run(run_id)
    if current is None or current["status"] != status:
        st.rerun()


def downloads(frame: pd.DataFrame, stem: str, key: str) -> None:
    """CSV (safe to open in a spreadsheet), Parquet and JSON downloads of a table, as shown."""
    data = frame.reset_index(drop=not any(frame.index.names)) if frame.index.name or any(frame.index.names) else frame
    parquet = io.BytesIO()
    data.to_parquet(parquet, index=False)
    cols = st.columns(3)
    cols[0].download_button("CSV", csv_export.to_csv(data), f"{stem}.csv", "text/csv", key=f"{key}-csv")
    cols[1].download_button("Parquet", parquet.getvalue(), f"{stem}.parquet", "application/octet-stream",
                            key=f"{key}-parquet")
    cols[2].download_button("JSON", data.to_json(orient="records", force_ascii=False, date_format="iso"), f"{stem}.json",
                            "application/json", key=f"{key}-json")


def report_button(run_id: str, *, methods: list[str] | None = None, baseline: str | None = None,
                  key: str = "report") -> None:
    """"Download report": the run's report file (evaluators/presentation/report.py, several MB), built when the button is clicked,
    on Streamlit's download thread, not on every rerun of the page."""
    st.download_button("Download report", functools.partial(report.report_html, store(), run_id, methods=methods,
                                                            baseline=baseline),
                       file_name=f"{run_id}-report.html", mime="text/html", on_click="ignore", key=key,
                       icon=":material/download:",
                       help="One HTML file to send: the headline, the comparison, the questions where the methods "
                            "differ most and how the scores are computed. It opens offline in any browser and "
                            "prints on A4.")


def plotly_config(filename: str) -> dict:
    """Plotly's own toolbar button saves the chart as PNG (in the browser; no server-side renderer)."""
    return {"toImageButtonOptions": {"format": "png", "filename": filename, "scale": 2}, "displaylogo": False}


def how_computed(metric_ids, intro: str | None = None) -> None:
    """The "How scores are computed" panel: `intro` first (a screen's own rule, e.g. Diagnosis's attribution), then
    each metric's formula as implemented and its source seed; a user's metric (an analyst's criterion: its text,
    scale, levels, inputs and version) as the run in view stored it."""
    run_id = st.session_state.get("run_id")
    own = versions.as_stored(store(), run_id) if run_id else {}
    with st.expander("How scores are computed"):
        if intro:
            st.text(intro)  # shown as written
        for metric_id in metric_ids:
            m = own.get(metric_id) or find(metric_id)  # id_recall@5 too
            if m is None:
                continue
            st.markdown(f"**`{m.id}`** · {md_escape(m.family)} · scale {m.scale} · {md_escape(versions.source(m))}")
            st.text(m.formula)  # st.text: shown as written, never interpreted as markdown
        measured = agreement.table(metric_ids)
        if len(measured):
            st.markdown("**The offline judge against people**: agreement on the test parts of public "
                        "human-labelled sets, beside the best simple baseline on the same items (a difference "
                        "whose CI is above 0 means the offline judge agrees with people better).")
            st.dataframe(measured, hide_index=True)
            st.caption(f"Measured by {agreement.source()}.")
