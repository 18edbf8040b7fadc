"""Checks on what a screen shows in an AppTest: tables and figures as values, markup kept inert, the run pinned."""
from __future__ import annotations

import base64
import json
from html.parser import HTMLParser

from pathlib import Path

import numpy as np
import pandas as pd
from streamlit.proto.WidgetStates_pb2 import WidgetState
from streamlit.testing.v1 import AppTest


def keep_run(at, run_id: str):
    """Pin the run picked in the sidebar for every later run of `at` (an AppTest).

    Streamlit 1.67's AppTest loses the sidebar's widgets from the second run of an st.navigation
    app on (reproduced with a five-line app), so the run picker would reset and the page would say
    "No run yet"; a browser session keeps it."""
    run = at._run

    def pinned(widget_state=None, timeout=None):
        at.session_state["run_id"] = run_id
        return run(widget_state, timeout)

    at._run = pinned
    return at


MARKER = "alert(1)"  # in every payload


def assert_shown(shown, expected) -> None:
    """A table on the page is the view's (up to the dtypes the browser's Arrow round trip gives)."""
    pd.testing.assert_frame_equal(shown.reset_index(drop=True), expected.reset_index(drop=True), check_dtype=False)


def assert_page_is_inert(at: AppTest) -> None:
    """Uploaded text reaches st.html escaped and never reaches a markdown element or a label."""
    assert not at.exception, at.exception
    for element in at.html:
        assert_inert(element.value)
    markdown = [*at.markdown, *at.caption, *at.info, *at.warning, *at.error, *at.success, *at.title,
                *at.header, *at.subheader]
    labels = [e.label for e in (*at.expander, *at.tabs, *at.metric, *at.button, *at.selectbox, *at.multiselect,
                                *at.text_input, *at.toggle)]
    for text in [m.value for m in markdown] + labels:
        assert MARKER not in text and "<b>bold" not in text, text


# The only markup the module writes.
ALLOWED_TAGS = {"div", "span", "mark", "sup", "sub", "a", "ul", "li", "b", "i", "h1", "h2", "h3", "h4", "h5", "h6"}


class _Markup(HTMLParser):
    """Every tag and attribute of an HTML string, and its text as a browser would show it."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.text = ""

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text += data


def assert_inert(markup: str, *shown: str) -> _Markup:
    """`markup` has only our own tags, no event handler, no link leaving the page, no script; and
    each of `shown` is displayed as text."""
    parsed = _Markup()
    parsed.feed(markup)
    parsed.close()
    for tag, attrs in parsed.tags:
        assert tag in ALLOWED_TAGS, f"unexpected tag <{tag}> in {markup!r}"
        assert not any(name.startswith("on") for name in attrs), f"event handler in <{tag} {attrs}>"
        assert "src" not in attrs, f"src attribute in <{tag} {attrs}>"
        if "href" in attrs:
            assert attrs["href"].startswith("#rs-chunk-"), f"link leaving the page: {attrs['href']!r}"
    for text in shown:
        assert text in parsed.text, f"{text!r} is not shown as text"
    return parsed


def metrics_table(at: AppTest):
    """Overview's table of every metric per method (below the headline's)."""
    return next(d.value for d in at.dataframe if "family" in d.value.columns)


def element(at, kind: str, key: str):
    found = [e for e in at.get(kind) if e.key == key]
    assert found, f"no {kind} with key {key!r}"
    return found[0]


def figure(at, key: str) -> dict:
    return json.loads(element(at, "plotly_chart", key).proto.spec)


def values(array) -> list:
    """A plotly JSON array: a list, or numpy data as {"dtype", "bdata": base64} (plotly >= 6)."""
    if isinstance(array, dict):
        raw = np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"])
        shape = [int(d) for d in str(array.get("shape", raw.size)).split(",")]  # a heatmap's z is 2-D
        return raw.reshape(shape).tolist()
    return list(array)


def same(shown: pd.DataFrame, expected: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(shown.reset_index(drop=True), expected.reset_index(drop=True), check_dtype=False)


# AppTest cannot click a plotly chart or a dataframe row: `click` sends the state the browser sends on such a click
# (the selection JSON under the element's id) with the next run, so the page's own code reads the event.


def click(at, target, selection: dict) -> None:
    """Run the app with `selection` as the clicked chart's or table's event."""
    states = at._tree.get_widget_states()
    states.widgets.append(WidgetState(id=target.proto.id, string_value=json.dumps({"selection": selection})))
    at._run(states)
    assert not at.exception, at.exception


def points(*customdata) -> dict:
    return {"points": [{"curve_number": 0, "point_index": i, "customdata": list(c)} for i, c in enumerate(customdata)],
            "point_indices": list(range(len(customdata))), "box": [], "lasso": []}


def rows(*positions) -> dict:
    return {"rows": list(positions), "columns": [], "cells": []}


def page(at) -> str:
    return Path(at._registered_pages[at._finished_page_script_hash]["script_path"]).name
