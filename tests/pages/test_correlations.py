"""The Correlations page on the evaluated demo run (AppTest): it draws the tables of
`queries.correlations.view` (whose numbers tests/queries/test_correlations.py checks against scipy), a heatmap
click shows that pair's scatter, and a point opens Claims.

AppTest cannot click a plotly chart: `click` sends the selection the browser sends on a click with
the next run, so the page's own code reads the event, as in the browser."""
import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.proto.WidgetStates_pb2 import WidgetState

from evaluators.queries import correlations as q
from evaluators.store import open_store
from tests.helpers.screens import values

pytestmark = pytest.mark.usefixtures("navigation_pages")


def chart(at, key: str):
    found = [e for e in at.get("plotly_chart") if e.key == key]
    assert found, f"no chart with key {key!r}"
    return found[0]


def figure(at, key: str) -> dict:
    return json.loads(chart(at, key).proto.spec)


def click(at, target, customdata) -> None:
    """Run the app with a click on the point carrying `customdata` as the chart's event."""
    selection = {"points": [{"curve_number": 1, "point_index": 0, "customdata": list(customdata)}],
                 "point_indices": [0], "box": [], "lasso": []}
    states = at._tree.get_widget_states()
    states.widgets.append(WidgetState(id=target.proto.id, string_value=json.dumps({"selection": selection})))
    at._run(states)
    assert not at.exception, at.exception


def page(at) -> str:
    return Path(at._registered_pages[at._finished_page_script_hash]["script_path"]).name


def test_the_page_draws_the_views_tables_and_a_cell_shows_its_scatter(app_at):
    at = app_at("pages/correlations.py")
    assert at.title[0].value == "Correlations"
    store, run_id = open_store(app_at.db), at.session_state["run_id"]
    tables = q.view(store, run_id)
    heatmap, cells = figure(at, "cor_heatmap")["data"]
    matrix = tables["matrix"]
    assert values(heatmap["x"]) == list(matrix.columns) and values(heatmap["y"]) == list(matrix.index)
    np.testing.assert_allclose(np.array(values(heatmap["z"]), dtype=float), matrix.to_numpy(dtype=float))
    hover = next(c for c in cells["customdata"] if c[0] == "rouge_l" and c[1] == "faithfulness")
    # the demo's 206 answers but the 4 that abstain, whose faithfulness is not applicable (issue 34)
    assert hover[3] == tables["n"].loc["faithfulness", "rouge_l"] == 202
    assert any("Not shown" in c.value and "exact_match" in c.value for c in at.caption)
    assert {b.label for b in at.get("download_button")} >= {"CSV", "Parquet", "JSON"}

    cell = next(c for c in cells["customdata"] if c[0] == "rouge_l" and c[1] == "judge_overall")
    click(at, chart(at, "cor_heatmap"), cell)
    assert (at.selectbox(key="cor_x").value, at.selectbox(key="cor_y").value) == ("rouge_l", "judge_overall")
    scatter = figure(at, "cor_scatter")
    assert {t["name"] for t in scatter["data"]} == {"basic_search", "local_search"}
    assert sum(len(values(t["x"])) for t in scatter["data"]) == 206
    r = matrix.loc["rouge_l", "judge_overall"]
    assert any(c.value.startswith(f"Pearson r = {r:.3f} (n 206)") for c in at.caption)
    point = scatter["data"][0]["customdata"][0]
    click(at, chart(at, "cor_scatter"), point)
    assert page(at) == "claims.py" and at.session_state["question_id"] == point[0]
