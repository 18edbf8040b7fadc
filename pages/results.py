"""Results of the selected run: per method, every metric's mean with n scored / n total."""
import streamlit as st

from evaluators import queries
from evaluators.metrics import REGISTRY

store, run_id = st.session_state["store"], st.session_state["run_id"]
st.title("RAGScope")
if run_id is None:
    st.info("No run yet. Evaluate one with `python -m evaluators run --golden ... --outputs ...`.")
    st.stop()

run = store.run(run_id)
st.subheader(run["name"])
st.caption(f"{run_id} - {run['n_samples']} samples - status {run['status']} - judge {run['judge']}")

table = queries.summary_table(store, run_id)
if table.empty:
    st.info(f"This run has no scores yet (status: {run['status']}). Continue it with "
            f"`python -m evaluators run --resume {run_id}` while the app is stopped.")
    st.stop()
table.insert(0, "scale", [REGISTRY[m].scale if m in REGISTRY else "" for m in table.index])
table.insert(1, "seed", [REGISTRY[m].seed if m in REGISTRY else "" for m in table.index])
st.dataframe(table, width="stretch")
st.caption("Mean over the cells scored `ok`; n = scored / total. Not-applicable and failed cells are not averaged.")
if (table["judge"] == "offline").any():
    st.info("Metrics judged `offline` come from a deterministic heuristic (word coverage, MiniLM similarity, "
            "a numbers-and-negation check), not from an LLM. Treat them as indicative.")

with st.expander("Score cells"):
    st.dataframe(queries.run_scores(store, run_id), width="stretch", hide_index=True)
