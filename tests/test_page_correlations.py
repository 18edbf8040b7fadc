"""The Correlations screen on the evaluated demo run (AppTest): the heatmap's coefficient and n for a
pair against scipy on the same data, the coefficient / method / family choices, and the cell and
point drill-downs.

AppTest cannot click a plotly chart: `click` sends the selection the browser sends on a click with
the next run, so the page's own code reads the event, as in the browser."""
import base64
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from streamlit.proto.WidgetStates_pb2 import WidgetState

from evaluators.store import open_store

pytestmark = pytest.mark.usefixtures("navigation_pages")

SCIPY = {"pearson": sps.pearsonr, "spearman": sps.spearmanr, "kendall": sps.kendalltau}


def chart(at, key: str):
    found = [e for e in at.get("plotly_chart") if e.key == key]
    assert found, f"no chart with key {key!r}"
    return found[0]


def figure(at, key: str) -> dict:
    return json.loads(chart(at, key).proto.spec)


def values(array) -> list:
    """A plotly JSON array: a list, or numpy data as {"dtype", "bdata": base64} (plotly >= 6)."""
    if isinstance(array, dict):
        raw = np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"])
        shape = [int(d) for d in str(array.get("shape", raw.size)).split(",")]
        return raw.reshape(shape).tolist()
    return list(array)


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


def heatmap_cell(at, metric_x: str, metric_y: str) -> tuple[float, int]:
    """(coefficient from the heatmap's z, n from the cell's hover data) as the page draws them."""
    heatmap, cells = figure(at, "cor_heatmap")["data"]
    x, y = values(heatmap["x"]), values(heatmap["y"])
    z = values(heatmap["z"])
    hover = next(c for c in cells["customdata"] if c[0] == metric_x and c[1] == metric_y)
    return z[y.index(metric_y)][x.index(metric_x)], hover[3]


def samples(db, metric_x: str, metric_y: str, method: str | None = None) -> pd.DataFrame:
    """Norm values of the samples scored ok on both metrics, straight from the scores table."""
    return open_store(db).cursor().execute(
        """
        SELECT a.norm AS x, b.norm AS y FROM scores a JOIN scores b USING (run_id, question_id, method)
        WHERE a.metric = $x AND b.metric = $y AND a.status = 'ok' AND b.status = 'ok'
          AND ($method IS NULL OR a.method = $method)
        """, {"x": metric_x, "y": metric_y, "method": method}).df()


def test_a_cells_coefficient_and_n_match_scipy(app_at):
    at = app_at("pages/correlations.py")
    assert at.title[0].value == "Correlations"
    data = samples(app_at.db, "rouge_l", "faithfulness")
    r, n = heatmap_cell(at, "rouge_l", "faithfulness")
    assert n == len(data) == 206
    assert r == pytest.approx(sps.pearsonr(data["x"], data["y"]).statistic)
    assert heatmap_cell(at, "faithfulness", "rouge_l") == (r, n)  # symmetric
    assert any("Not shown" in c.value and "exact_match" in c.value for c in at.caption)  # constant in the demo
    assert "exact_match" not in values(figure(at, "cor_heatmap")["data"][0]["x"])
    assert {b.label for b in at.get("download_button")} >= {"CSV", "Parquet", "JSON"}


@pytest.mark.parametrize("coefficient, method", [("spearman", None), ("kendall", "local_search")])
def test_other_coefficients_and_one_methods_samples(app_at, coefficient, method):
    at = app_at("pages/correlations.py")
    at.radio(key="cor_coef").set_value(coefficient)
    if method:
        at.selectbox(key="cor_method").set_value(method)
    at.run()
    assert not at.exception, at.exception
    data = samples(app_at.db, "judge_overall", "answer_relevance", method)
    r, n = heatmap_cell(at, "judge_overall", "answer_relevance")
    assert n == len(data) == (103 if method else 206)
    assert r == pytest.approx(SCIPY[coefficient](data["x"], data["y"]).statistic)


def test_metric_families_restrict_the_matrix(app_at):
    at = app_at("pages/correlations.py")
    at.multiselect(key="cor_families").set_value(["lexical", "semantic"]).run()
    shown = set(values(figure(at, "cor_heatmap")["data"][0]["x"]))
    assert shown == {"keyword_coverage", "answer_completeness", "citation_quality", "rouge_l", "dont_know",
                     "bert_score_f1", "semantic_similarity", "answer_relevance"}
    at.multiselect(key="cor_families").set_value(["composite"]).run()
    assert any("at least two metrics" in i.value for i in at.info)


def test_a_cell_shows_its_scatter_and_a_point_opens_claims(app_at):
    at = app_at("pages/correlations.py")
    _, cells = figure(at, "cor_heatmap")["data"]
    cell = next(c for c in cells["customdata"] if c[0] == "rouge_l" and c[1] == "judge_overall")
    click(at, chart(at, "cor_heatmap"), cell)
    assert (at.selectbox(key="cor_x").value, at.selectbox(key="cor_y").value) == ("rouge_l", "judge_overall")
    scatter = figure(at, "cor_scatter")
    assert {t["name"] for t in scatter["data"]} == {"basic_search", "local_search"}
    assert sum(len(values(t["x"])) for t in scatter["data"]) == 206
    data = samples(app_at.db, "rouge_l", "judge_overall")
    r = sps.pearsonr(data["x"], data["y"]).statistic
    assert any(c.value.startswith(f"Pearson r = {r:.3f} (n 206)") for c in at.caption)
    point = scatter["data"][0]["customdata"][0]
    click(at, chart(at, "cor_scatter"), point)
    assert page(at) == "claims.py" and at.session_state["question_id"] == point[0]
