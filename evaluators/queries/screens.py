"""Every screen's JSON twin: screen name -> its `view` function.

The contract: `view(store, run_id, *, <options>) -> dict[str, pd.DataFrame]` returns the named tables
the screen shows, exactly as shown (computed, pivoted and formatted columns included; a table's row
labels as a named index), in the order the screen shows them, the same names whatever the data (an
empty table where the screen shows none). Options are keyword-only, with defaults equal to what the
screen shows when first opened; a value the screen cannot offer raises ValueError naming the allowed
ones. Views are pure pandas (no Streamlit): the page turns its widgets into options, calls `view(...)`
and lays out the tables; its charts are drawn from these tables.

`python -m evaluators view SCREEN RUN_ID [--option VALUE] [--json|--csv]` prints the same tables, one
flag per keyword-only option, read off the signature: `list[str]` options take comma-separated values,
int / float / bool ones are converted, and the line `name: text` of the view's docstring is the flag's
help. A screen that needs no run declares `run_id: str | None = None`; its RUN_ID is then optional. Where a
screen compares methods across runs (compare), a method option also takes `RUN_ID:METHOD` (evaluators.queries.sides):
that method of another run, named so in the tables.
"""
from __future__ import annotations

from evaluators.queries import (claims, compare, correlations, datasets, diagnosis, errors, evaluate, history,
                                overview)

SCREENS = {
    "overview": overview.view,
    "compare": compare.view,
    "history": history.view,
    "correlations": correlations.view,
    "claims": claims.view,
    "diagnosis": diagnosis.view,
    "error_analysis": errors.view,
    "evaluate": evaluate.view,
    "data": datasets.view,
}
