"""The Evaluate screen (AppTest on a copy of the demo database): the choice and its cost, a background run
started, polled to the end and opened; a live run seen and cancelled from another session; resume and
re-run of failed cells; the OpenAI judge's key typed in the page, used by the worker, never stored."""
import json
import threading
import time

from evaluators.queries import datasets as qd
from evaluators.queries import evaluate as qe
from evaluators.runs import engine, lifecycle, planning
from evaluators.judges import OfflineJudge, OpenAIJudge, prices
from evaluators.runs.estimate import estimate
from evaluators.metrics import REGISTRY, resolve
from evaluators.metrics.ranking import RANK_METRICS
from evaluators.judges import prompts
from evaluators.store import open_store
from tests.helpers.screens import metrics_table
from tests.helpers.openai_server import Reply, reasoning_model_rules, start_server
from tests.helpers.screens import assert_shown
from tests.helpers.seed_000 import SEED_000_EXTRACTION, SEED_000_VERIFICATION
from ui.common import md_escape
from tests.helpers.evaluate_screen import (TIMEOUT, metric_checkbox, _pick_metrics, tiny_judged_data, until_done,
                                           choose_openai, start_and_wait, check_table, until_checked)

KEY = "sk-typed-in-the-page-never-stored"


def _statuses(store, run_id):
    return store.cursor().execute("SELECT question_id, method, metric, status, created_at FROM scores WHERE run_id = ?",
                                  [run_id]).fetchall()


def test_the_screen_shows_the_choice_its_size_and_the_finished_demo_run(app_at):
    at = app_at("pages/evaluate.py")
    store = open_store(app_at.db)
    golden = qd.golden_sets(store)
    assert at.title[0].value == "Evaluate"
    assert at.selectbox(key="eval-golden").value == golden["dataset_id"].iloc[0]
    assert at.multiselect(key="eval-methods").value == ["basic_search", "local_search"]
    # the demo's golden set names no relevant document: the rank metrics are not offered, and the screen says why
    assert "eval-metrics-ranking" not in {m.key for m in at.multiselect}
    assert any("this golden set names no relevant document" in c.value for c in at.caption)
    n_metrics = len(REGISTRY) - len(RANK_METRICS)  # every metric: the default catalogue, whose rank metrics need ids
    cells = f"{n_metrics} metrics = {206 * n_metrics:,} cells"
    assert f"206 samples (2 methods x up to 103 questions) x {cells}" in [c.value for c in at.caption]
    coverage = next(d.value for d in at.dataframe if "golden questions answered" in d.value.columns)
    assert coverage.set_index("method")["golden questions answered"].to_dict() == {"basic_search": "103 of 103",
                                                                                 "local_search": "103 of 103"}
    assert any(c.value == "Offline judge: no calls, no key, no network." for c in at.caption)
    demo_run = qd.recent_runs(store)["run_id"].iloc[0]
    assert at.selectbox(key="eval-run").value == demo_run
    expected = qe.view(store, demo_run)  # its numbers: tests/queries/test_datasets.py
    for label, value in expected["totals"].iloc[0].items():
        assert metric_checkbox(at, label) == f"{value:,}"
    assert_shown(next(d.value for d in at.dataframe if "not computed" in d.value.columns), expected["cells"])
    assert any("Finished." in s.value for s in at.success)
    assert at.button(key="eval-open-run").label == "Open the results"
    assert not any(c.value.startswith("cost") for c in at.caption)  # offline: no money line


def test_the_sidebar_shows_no_money_for_an_offline_run(app_at):
    sidebar = [c.value for c in app_at().sidebar.caption]  # the demo run, judged offline
    assert sidebar[0].startswith("finished · judge offline") and not any(c.startswith("cost") for c in sidebar)


def test_an_offline_run_of_two_lexical_metrics_runs_in_the_background_to_the_end_and_opens(app_at):
    at = app_at("pages/evaluate.py")
    store = open_store(app_at.db)
    at.button(key="eval-pick-lexical").click()
    at.run()
    lexical = [m.id for m in REGISTRY.values() if m.family == "lexical"]
    assert at.multiselect(key="eval-metrics-lexical").value == lexical
    assert at.multiselect(key="eval-metrics-claims").value == []
    _pick_metrics(at, lexical=["exact_match", "rouge_l"])
    at.multiselect(key="eval-methods").set_value(["local_search"])
    at.run()
    assert "103 samples (1 method x up to 103 questions) x 2 metrics = 206 cells" in [c.value for c in at.caption]
    at.text_input(key="eval-name").input("two lexical metrics")
    at.button(key="eval-start").click()
    at.run()
    assert not at.exception, at.exception
    run_id = at.selectbox(key="eval-run").value
    assert store.run(run_id)["name"] == "two lexical metrics"

    run = until_done(at, store, run_id)
    assert run["status"] == "finished" and list(run["metrics"]) == ["exact_match", "rouge_l"]
    # the one shape of a run's config, whoever makes the run (the CLI's and evaluate()'s: tests/test_api.py)
    assert json.loads(run["config"]) == lifecycle.RunSpec(OfflineJudge(), methods=["local_search"]).config()
    cells = _statuses(store, run_id)
    assert len(cells) == len({c[:3] for c in cells}) == 206
    assert {c[1] for c in cells} == {"local_search"} and {c[3] for c in cells} == {"ok"}
    assert metric_checkbox(at, "Scored") == "206" and metric_checkbox(at, "Not computed yet") == "0"
    assert any(t.value.startswith("two lexical metrics\n" + run_id) for t in at.text)

    at.button(key="eval-open-run").click()
    at.run()
    assert at.title[0].value == "Overview" and at.session_state["run_id"] == run_id
    assert "two lexical metrics" in at.caption[0].value
    assert metrics_table(at).loc["rouge_l", "local_search n"] == "103/103"


def test_the_openai_estimate_is_shown_before_starting(app_at, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    at = app_at("pages/evaluate.py")
    store = open_store(app_at.db)
    at.radio(key="eval-judge").set_value("openai")
    at.run()
    golden, outputs = qd.golden_sets(store)["dataset_id"].iloc[0], at.multiselect(key="eval-outputs").value
    samples = planning.plan(store.golden_items(golden), store.rag_outputs(outputs)).samples
    expected = estimate(samples, OpenAIJudge("m"), resolve(None))
    assert expected.total_calls > 2 * 206
    assert metric_checkbox(at, "Judge calls") == f"{expected.total_calls:,}"
    # the input read anew and the input a prompt cache serves, apart
    cached = expected.total_cached_input_tokens
    assert metric_checkbox(at, "Input tokens (estimate)") == f"{expected.total_input_tokens - cached:,}"
    assert metric_checkbox(at, "Cached input tokens (estimate)") == f"{cached:,}" and cached > 0
    assert metric_checkbox(at, "Output tokens (estimate)") == f"{expected.total_output_tokens:,}"
    assert at.button(key="eval-start").disabled
    assert any("name the judge's model; enter the API key" in c.value for c in at.caption)
    # No model, no price: the cost is unknown, never $0.
    assert at.number_input(key="eval-price-in").value is None and metric_checkbox(at, "Cost (estimate)") == "unknown"
    assert any(c.value.startswith("No list price known for model") for c in at.caption)

    at.text_input(key="eval-model").input("gpt-4o-mini")
    at.run()
    assert [at.number_input(key=f"eval-price-{side}").value for side in ("in", "cached", "out")] == [0.15, 0.075, 0.6]
    assert metric_checkbox(at, "Cost (estimate)") == prices.usd(expected.cost(prices.Price(0.15, 0.6, 0.075)))
    assert any(c.value.startswith("List price of gpt") for c in at.caption)
    at.checkbox(key="eval-batch").check()  # the Batch API: half the price
    at.run()
    assert metric_checkbox(at, "Cost (estimate)") == prices.usd(expected.cost(prices.Price(0.075, 0.3, 0.0375)))
    at.checkbox(key="eval-batch").uncheck()
    at.run()
    at.number_input(key="eval-price-in").set_value(1.0)  # e.g. another contract
    at.run()
    assert metric_checkbox(at, "Cost (estimate)") == prices.usd(expected.cost(prices.Price(1.0, 0.6, 0.075)))
    assert not any(c.value.startswith("List price of") for c in at.caption)
    at.radio(key="eval-judge").set_value("offline")
    at.run()
    assert not [m for m in at.metric if m.label == "Cost (estimate)"]
    at.radio(key="eval-judge").set_value("openai")
    at.run()
    at.text_input(key="eval-model").input("gpt-4o-mini")  # the page forgets the model while it is not drawn
    at.run()
    assert at.number_input(key="eval-price-in").value == 0.15  # prefilled again

    at.button(key="eval-pick-nojudge").click()
    at.run()
    assert metric_checkbox(at, "Judge calls") == "0" and metric_checkbox(at, "Cost (estimate)") == "$0.00"
    assert any("No chosen metric needs the judge" in c.value for c in at.caption)


def test_a_reasoning_models_effort_is_an_option_and_its_estimate_says_its_reasoning_allowance(app_at, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    at = app_at("pages/evaluate.py")
    store = open_store(app_at.db)
    at.radio(key="eval-judge").set_value("openai")
    at.run()
    at.text_input(key="eval-model").input("gpt-5-mini")
    at.selectbox(key="eval-reasoning-effort").set_value("low")
    at.run()
    golden, outputs = qd.golden_sets(store)["dataset_id"].iloc[0], at.multiselect(key="eval-outputs").value
    samples = planning.plan(store.golden_items(golden), store.rag_outputs(outputs)).samples
    expected = estimate(samples, OpenAIJudge("gpt-5-mini", reasoning_effort="low"), resolve(None))
    assert metric_checkbox(at, "Output tokens (estimate)") == f"{expected.total_output_tokens:,}"
    assert any("reasoning: ~500 tokens per call assumed" in c.value for c in at.caption)
    at.selectbox(key="eval-reasoning-effort").set_value(None)  # the server's default: medium's allowance
    at.run()
    assert any("reasoning: ~1,500 tokens per call assumed" in c.value for c in at.caption)
    at.text_input(key="eval-model").input("gpt-4o-mini")
    at.run()
    assert not any("reasoning:" in c.value for c in at.caption)


def test_a_cancelled_run_resumes_and_failed_cells_are_recomputed(app_at):
    at = app_at("pages/evaluate.py")
    store = open_store(app_at.db)
    golden = qd.golden_sets(store)["dataset_id"].iloc[0]
    outputs = at.multiselect(key="eval-outputs").value
    run_id = lifecycle.start_stored(store, golden, outputs,
                                    lifecycle.RunSpec(metrics=["exact_match", "rouge_l"], name="half done"))
    cancel = threading.Event()
    status = engine.execute_run(store, run_id, batch_size=engine.BATCH_SIZE, cancel=cancel,
                                on_metric=lambda m, d, *_: d and cancel.set())
    assert status == "cancelled"  # after exact_match, before rouge_l (one batch of every sample)

    at.run()  # the run list now holds it
    at.selectbox(key="eval-run").set_value(run_id)
    at.run()
    assert metric_checkbox(at, "Scored") == "206" and metric_checkbox(at, "Not computed yet") == "206"
    assert any(i.value.startswith("Cancelled: the 206 cells computed so far are stored") for i in at.info)
    before = {c[:3]: c[4] for c in _statuses(store, run_id)}
    at.button(key="eval-resume").click()
    at.run()
    run = until_done(at, store, run_id)
    assert run["status"] == "finished" and metric_checkbox(at, "Not computed yet") == "0"
    after = {c[:3]: c[4] for c in _statuses(store, run_id)}
    assert len(after) == 412 and all(after[k] == t for k, t in before.items())

    store.cursor().execute("UPDATE scores SET status = 'judge_error', value = NULL, norm = NULL "
                           "WHERE run_id = ? AND metric = 'rouge_l' AND method = 'local_search' AND question_id IN "
                           "(SELECT question_id FROM golden_items WHERE dataset_id = ? ORDER BY question_id LIMIT 3)",
                           [run_id, golden])
    at.run()
    assert metric_checkbox(at, "Failed") == "3" and any("3 cells failed" in s.value for s in at.success)
    retry = at.button(key="eval-retry")
    assert retry.label == "Re-run 3 failed cells"
    retry.click()
    at.run()
    run = until_done(at, store, run_id)
    assert run["status"] == "finished" and metric_checkbox(at, "Failed") == "0"
    cells = _statuses(store, run_id)
    assert len(cells) == 412 and {c[3] for c in cells} == {"ok"}


def test_an_openai_run_uses_the_typed_key_is_cancelled_from_another_session_and_resumed(
        app_at, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # the run can only work with the typed key
    at = app_at("pages/evaluate.py")
    store = open_store(app_at.db)
    golden, outputs = tiny_judged_data(store, tmp_path)
    gate = threading.Event()  # holds every judge reply until the test lets it go

    def reply(body):
        gate.wait(TIMEOUT)
        name = prompts.task_of(body["messages"])
        return Reply.json(SEED_000_EXTRACTION if name == "extraction" else SEED_000_VERIFICATION)

    with start_server() as server:
        server.responder = reply
        at.run()  # the golden set list now holds it
        at.selectbox(key="eval-golden").set_value(golden)
        at.run()
        assert at.multiselect(key="eval-outputs").value == [outputs]
        at.radio(key="eval-judge").set_value("openai")
        at.run()
        _pick_metrics(at, lexical=["exact_match"], claims=["faithfulness", "context_precision"])
        at.text_input(key="eval-base-url").input(server.base_url)
        at.text_input(key="eval-model").input("test-model")
        at.text_input(key="eval-key-input").input(KEY)
        at.number_input(key="eval-concurrency").set_value(2)
        at.number_input(key="eval-repeats").set_value(2)
        at.run()
        # 12 samples x (1 extraction + 1 verification); repeats multiply only the holistic call, not needed here
        assert metric_checkbox(at, "Judge calls") == "24"
        assert metric_checkbox(at, "Cost (estimate)") == "unknown"  # test-model has no list price
        at.number_input(key="eval-price-in").set_value(2.0)
        at.number_input(key="eval-price-out").set_value(8.0)
        at.run()
        assert metric_checkbox(at, "Cost (estimate)").startswith("$")
        assert not at.button(key="eval-start").disabled
        at.button(key="eval-start").click()
        at.run()
        assert not at.exception, at.exception
        run_id = at.selectbox(key="eval-run").value
        assert at.button(key="eval-cancel")  # live: the worker waits for the judge
        # its progress at the top of the screen too (tree order: above the form), named, then in its panel below
        deadline = time.monotonic() + TIMEOUT
        while "of 36 cells" not in at.progress[0].proto.text:  # the worker's first report: the run's size
            assert time.monotonic() < deadline, at.progress[0].proto.text
            time.sleep(0.1)
            at.run()  # what the fragment's timer does in a browser
        top, panel = (bar.proto.text for bar in at.progress)
        assert top.startswith(md_escape(store.run(run_id)["name"]) + " · ") and "of 36 cells" in top
        assert "of 36 cells" in panel and "running for" in panel

        other = app_at("pages/evaluate.py")  # another browser session sees the run and cancels it
        assert any(c.value.startswith("1 run under way in this app") for c in other.caption)
        assert other.selectbox(key="eval-run").value == run_id
        other.button(key="eval-cancel").click()
        other.run()
        assert any(i.value.startswith("Cancelling") for i in other.info)
        gate.set()
        run = until_done(at, store, run_id)
        assert run["status"] == "cancelled"
        metrics = sorted(c[2] for c in _statuses(store, run_id))
        assert metrics == ["exact_match"] * 12 + ["faithfulness"] * 12  # stopped before context_precision
        assert metric_checkbox(at, "Not computed yet") == "12"
        requests = server.request_count
        assert requests == 24

        assert at.text_input(key="eval-resume-key").value == KEY  # kept in this session, offered again
        at.button(key="eval-resume").click()
        at.run()
        run = until_done(at, store, run_id)
    assert run["status"] == "finished", run["error"]
    cells = _statuses(store, run_id)
    assert len(cells) == len({c[:3] for c in cells}) == 36 and {c[3] for c in cells} == {"ok"}
    assert server.request_count == requests  # the resume's judge requests came from the judge cache
    assert at.session_state["eval-api-key"] == KEY
    assert KEY not in run["config"] and json.loads(run["config"])["base_url"] == server.base_url
    assert json.loads(run["config"])[prices.CONFIG_KEY] == {"input": 2.0, "output": 8.0}
    assert json.loads(run["config"])["repeats"] == 2
    # The cost of the calls paid (the resume's replies came from the cache: free), in the panel and the sidebar.
    paid = store.cursor().execute("SELECT sum(input_tokens), sum(output_tokens) FROM judge_calls WHERE run_id = ? AND "
                                  "NOT cached", [run_id]).fetchall()[0]
    line = md_escape(prices.spent_text(prices.cost(*paid, prices.Price(2, 8)), prices.Price(2, 8), "test-model"))
    assert paid[0] > 0 and line in [c.value for c in at.caption]
    # AppTest draws the sidebar of an st.navigation app in its first run only: a fresh session, on this run (picked:
    # a session opens on the newest finished run of 20 samples or more, the demo's).
    from streamlit.testing.v1 import AppTest

    from tests.helpers import ROOT

    fresh = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    fresh.session_state["run_id"] = run_id
    fresh.run()
    sidebar = [c.value for c in fresh.sidebar.caption]
    assert sidebar[0].startswith("finished · judge openai · test\\-model") and line in sidebar
    stored = store.cursor().execute("SELECT string_agg(coalesce(request, '') || coalesce(response, '') || "
                                    "coalesce(error, ''), '') FROM judge_calls WHERE run_id = ?", [run_id]).fetchall()
    assert stored[0][0] and KEY not in stored[0][0]


def test_a_wrong_key_stops_the_run_at_once_the_screen_says_why_and_a_resume_with_the_right_key_finishes(
        app_at, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    at = app_at("pages/evaluate.py")
    store = open_store(app_at.db)
    golden, outputs = tiny_judged_data(store, tmp_path)

    def reply(body):
        name = prompts.task_of(body["messages"])
        return Reply.json(SEED_000_EXTRACTION if name == "extraction" else SEED_000_VERIFICATION)

    with start_server() as server:
        server.api_key, server.responder = KEY, reply
        choose_openai(at, golden, server.base_url)
        at.text_input(key="eval-key-input").input("sk-wrong")
        at.number_input(key="eval-concurrency").set_value(2)
        run_id, run = start_and_wait(at, store)
        assert run["status"] == "failed" and server.request_count <= 2  # those in flight, none after
        assert run["error"].startswith("the judge server refused the API key (HTTP 401")
        assert any(e.value == "The run stopped on this error:" for e in at.error)
        assert run["error"] in [c.value for c in at.code]  # the same message as the CLI's
        assert metric_checkbox(at, "Not computed yet") == "24" and metric_checkbox(at, "Failed") == "0"

        at.text_input(key="eval-resume-key").input(KEY)
        at.run()
        at.button(key="eval-resume").click()
        at.run()
        run = until_done(at, store, run_id)
    assert run["status"] == "finished", run["error"]
    assert {c[3] for c in _statuses(store, run_id)} == {"ok"} and len(_statuses(store, run_id)) == 24


def test_check_the_judge_runs_in_the_background_survives_other_clicks_and_shows_the_table(app_at, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    at = app_at("pages/evaluate.py")
    store = open_store(app_at.db)
    with start_server(latency=0.5) as server:  # each reply takes half a second: the check spans page runs
        server.rules, server.reasoning_tokens = reasoning_model_rules, 40
        at.radio(key="eval-judge").set_value("openai")
        at.run()
        assert at.button(key="eval-check-judge").disabled  # no model, no key yet
        assert any(c.value == "To check the judge: name the model; enter the API key." for c in at.caption)
        at.text_input(key="eval-base-url").input(server.base_url)
        at.text_input(key="eval-model").input("gpt-5-mini")
        at.text_input(key="eval-key-input").input(KEY)
        at.run()
        runs_before = len(qd.recent_runs(store))
        at.button(key="eval-check-judge").click()
        at.run()
        assert not at.exception, at.exception
        assert any(i.value.startswith("Checking gpt\\-5\\-mini at ") for i in at.info)
        assert at.button(key="eval-check-judge").disabled  # one check at a time
        at.number_input(key="eval-repeats").set_value(2)  # a click elsewhere: a new page run, the check goes on
        at.run()
        until_checked(at)
        bodies = [r.body for r in server.requests]
    table = check_table(at).set_index("capability")
    assert table.loc["temperature 0", "status"] == "not supported"
    assert table.loc["output limit", "detail"] == "max_completion_tokens (max_tokens refused)"
    assert table.loc["reasoning tokens in usage", "status"] == "supported"
    assert any(s.value.startswith("Judge check of gpt\\-5\\-mini at ") and "the judge can run" in s.value
               for s in at.success)
    assert any(md_escape("latency: median") in c.value and "list price as of" in c.value for c in at.caption)
    assert not at.button(key="eval-check-judge").disabled
    assert len(bodies) == 5  # temperature and max_tokens refused once each, then the schema, JSON mode and n probes
    assert len(qd.recent_runs(store)) == runs_before  # a check is no run: nothing stored
    shown = " ".join(str(e.value) for e in (*at.caption, *at.success, *at.info, *at.error, *at.code))
    assert KEY not in shown + check_table(at).to_string()


def test_check_the_judge_says_why_it_cannot_run(app_at, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    at = app_at("pages/evaluate.py")
    with start_server() as server:
        server.api_key = "sk-the-right-one"
        at.radio(key="eval-judge").set_value("openai")
        at.run()
        at.text_input(key="eval-base-url").input(server.base_url)
        at.text_input(key="eval-model").input("gpt-4o-mini")
        at.text_input(key="eval-key-input").input(KEY)
        at.run()
        at.text_input(key="eval-model").input("gpt-4.1")  # typed, then the button clicked: the check is of gpt-4.1
        at.button(key="eval-check-judge").click()
        at.run()
        deadline = time.monotonic() + 60
        while not at.error:
            assert time.monotonic() < deadline, "the check did not end"
            time.sleep(0.2)
            at.run()
    assert at.error[0].value.startswith("Judge check of gpt\\-4\\.1 at ")
    assert "refused the API key \\(HTTP 401" in at.error[0].value
    assert set(check_table(at)["status"]) == {"unknown"}
