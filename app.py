"""RAGScope: Streamlit entry point. Thin: page config, the database, the run picker, navigation."""
import os

import streamlit as st

from evaluators import queries
from evaluators.demo import ensure_demo
from evaluators.store import open_store

st.set_page_config(page_title="RAGScope", layout="wide")


@st.cache_resource(show_spinner=False)
def store_for(path: str):
    """One DuckDB connection per process and path (DuckDB 2.x); pages take a cursor per use."""
    store = open_store(path)
    # First start (or a first start that was stopped mid-way): open on evaluated demo data.
    if not (queries.runs(store)["status"] == "finished").any():
        ensure_demo(store)
    return store


db_path = os.environ.get("RAGSCOPE_DB", "data/ragscope.duckdb")
with st.spinner("Opening the database (the first start evaluates the demo data)..."):
    st.session_state["store"] = store_for(db_path)

runs = queries.runs(st.session_state["store"])
with st.sidebar:
    st.caption(f"Database: `{db_path}`")
    st.session_state["run_id"] = st.selectbox(
        "Run", runs["run_id"], format_func=lambda r: f"{runs.set_index('run_id').at[r, 'name']} ({r})"
    )

st.navigation([st.Page("pages/results.py", title="Results", default=True)]).run()
