"""RAGScope: Streamlit entry point. Thin: page config, sign-in when shared, the database, the run picker, navigation."""
import math
import os

import streamlit as st

from evaluators import queries
from evaluators.demo import start_demos
from evaluators.metrics import plugins
from evaluators.store import StoreLocked, StoreUnavailable, open_store
from ui.access import require_sign_in, sign_out_button
from ui.common import md_escape, run_cost_caption, run_manager

# A favicon of our own: without one, each page's :material/...: icon becomes the favicon, which the browser fetches
# from fonts.gstatic.com (a third party would learn when the app is used; with no network it fails).
st.set_page_config(page_title="RAGScope", page_icon="🔎", layout="wide")
PAGES = {
    "Results": [
        st.Page("pages/overview.py", title="Overview", icon=":material/leaderboard:", default=True),
        st.Page("pages/compare.py", title="Compare", icon=":material/compare_arrows:"),
        st.Page("pages/history.py", title="History", icon=":material/timeline:"),
        st.Page("pages/claims.py", title="Claims", icon=":material/fact_check:"),
        st.Page("pages/diagnosis.py", title="Diagnosis", icon=":material/stethoscope:"),
        st.Page("pages/correlations.py", title="Correlations", icon=":material/grid_on:"),
        st.Page("pages/error_analysis.py", title="Error analysis", icon=":material/troubleshoot:"),
    ],
    "Evaluate": [
        st.Page("pages/data.py", title="Data", icon=":material/upload_file:"),
        st.Page("pages/evaluate.py", title="Evaluate", icon=":material/play_circle:"),
    ],
}


@st.cache_resource(show_spinner=False)
def entry_point_failures() -> list[str]:
    """Installed packages' metrics (the `ragscope.metrics` entry points), loaded once per process; what failed."""
    return plugins.load_entry_points()[1]


require_sign_in(PAGES)  # a shared app: nothing below runs before the password
# Navigation first: until it runs, Streamlit would list the files of pages/ on its own.
navigation = st.navigation(PAGES)


@st.cache_resource(show_spinner=False)
def store_for(path: str):
    """The process's Store of `path`, its migrations checked once; it holds the file only while in use."""
    store = open_store(path)
    # First start (or a demo build stopped mid-way): the demo runs are computed in the background, the
    # default first; evaluating them takes minutes, so the app opens at once and their pages fill in.
    start_demos(store, run_manager())
    return store


def _busy() -> None:
    # Called between attempts to get the file; being an st call, it also lets a click end this script run.
    busy.info("The database is busy (another process is writing to it), retrying...")


db_path = os.environ.get("RAGSCOPE_DB", "data/ragscope.duckdb")
busy = st.empty()
try:
    with st.spinner("Opening the database..."):
        st.session_state["store"] = store_for(db_path)
# Another process kept the file longer than $RAGSCOPE_DB_WAIT, or it cannot be opened (not cached: a reload retries)
except (StoreLocked, StoreUnavailable) as exc:
    st.error(md_escape(str(exc)) + " Then reload this page.")
    st.stop()

# A script run is one unit of work: it holds the file until the page is drawn and then lets go of it, so
# `python -m evaluators` can use the file between two runs (its new runs show on the next one).
with st.session_state["store"].lease(wait=math.inf, on_busy=_busy):
    busy.empty()
    runs = queries.runs(st.session_state["store"])
    with st.sidebar:
        names = runs.set_index("run_id")["name"]
        # The run in view lives in a plain session key (pages set it to open a run); the picker shows it.
        # A widget key would be dropped whenever the widget is not drawn in a script run.
        if st.session_state.get("run_id") not in names.index:  # a new session: the newest finished run that is
            st.session_state["run_id"] = queries.default_run(runs)  # not a try-out of a few samples (queries.py)
        if st.session_state["run_id"] is not None:
            options = list(names.index)
            st.session_state["run_id"] = st.selectbox("Run", options,
                                                      index=options.index(st.session_state["run_id"]),
                                                      format_func=lambda r: f"{names[r]} ({r})")
            run = runs.set_index("run_id").loc[st.session_state["run_id"]]
            calls = queries.run_calls(st.session_state["store"], st.session_state["run_id"])
            judge = run["judge"] + (f" · {run['judge_model']}" if run["judge_model"] else "")
            took = ((run["finished_at"] - run["created_at"]).total_seconds() if run["finished_at"] is not None
                    else None)
            st.caption(md_escape(f"{run['status']} · judge {judge} · {run['n_samples']} samples x "
                                 f"{run['n_metrics']} metrics"
                                 + (f" · {took:.0f} s" if took is not None and took == took else "")))
            if calls["calls"] or calls["cached"]:
                st.caption(f"judge calls {calls['calls']} (+{calls['cached']} cached, {calls['failed']} failed) · "
                           f"tokens {calls['input_tokens']:,} in, {calls['output_tokens']:,} out")
            run_cost_caption(st.session_state["run_id"])
        else:
            st.caption("No run yet: add data on **Data**, then start a run on **Evaluate**.")
        st.caption(f"Database: `{db_path}`")
        for failure in entry_point_failures():  # a broken package is said, the app goes on without its metrics
            st.warning(md_escape(f"Plug-in not loaded: {failure}"))
        sign_out_button()

    try:
        navigation.run()
    except StoreUnavailable as exc:  # a write failed (a full disk): rolled back, and said instead of a traceback
        st.error(md_escape(str(exc)))
