"""The Evaluate screen with the azure judge (AppTest on a copy of the demo database, the scripted server's Azure route
on 127.0.0.1): its fields prefilled from the environment as the openai SDK reads it, no list price and no Batch API
for a deployment, Check the judge, and a run through the deployment's URL with the typed key, never stored."""
import json

from evaluators.judges import prompts
from evaluators.store import open_store
from tests.helpers.evaluate_screen import (_pick_metrics, metric_checkbox, start_and_wait, tiny_judged_data,
                                           until_checked)
from tests.helpers.openai_server import Reply, start_server
from tests.helpers.seed_000 import SEED_000_EXTRACTION, SEED_000_VERIFICATION

KEY = "sk-azure-typed-in-the-page-never-stored"
VERSION = "2024-10-21"
DEPLOYMENT = "gpt-4o-mini"  # named like a model, as deployments often are: still no list price


def reply(body):
    if body.get("response_format", {}).get("json_schema", {}).get("name") == "judge_check":
        return Reply.json({"ok": True})
    return Reply.json(SEED_000_EXTRACTION if prompts.task_of(body["messages"]) == "extraction"
                      else SEED_000_VERIFICATION)


def test_an_azure_deployment_is_checked_and_judges_a_run_from_the_screen(app_at, tmp_path, monkeypatch):
    for name in ("OPENAI_API_KEY", "AZURE_OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with start_server() as server:
        server.api_key, server.responder = KEY, reply
        monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", server.azure_endpoint)
        monkeypatch.setenv("OPENAI_API_VERSION", VERSION)
        at = app_at("pages/evaluate.py")
        store = open_store(app_at.db)
        golden, _ = tiny_judged_data(store, tmp_path)
        at.run()  # the golden set list now holds it
        at.selectbox(key="eval-golden").set_value(golden)
        at.run()
        at.radio(key="eval-judge").set_value("openai")
        at.run()
        at.text_input(key="eval-key-input").input("sk-typed-for-openai")
        at.run()
        at.radio(key="eval-judge").set_value("azure")
        at.run()
        assert at.text_input(key="eval-key-input").value == ""  # a key typed for another server is not offered...
        assert not at.exception, at.exception
        # the SDK's environment, prefilled; no base URL and no Batch API for a deployment
        assert at.text_input(key="eval-endpoint").value == server.azure_endpoint
        assert at.text_input(key="eval-api-version").value == VERSION
        assert at.text_input(key="eval-model").label == "Deployment"
        keys = {w.key for w in (*at.text_input, *at.checkbox)}
        assert "eval-base-url" not in keys and "eval-batch" not in keys
        # ... nor used
        assert any(c.value == "To check the judge: name the deployment; enter the API key." for c in at.caption)
        monkeypatch.delenv("OPENAI_API_VERSION")  # an empty field is the server's environment: now none either
        at.text_input(key="eval-api-version").input("")
        at.run()
        assert any(c.value == "To check the judge: name the deployment; give the API version; enter the API key."
                   for c in at.caption)
        assert any(c.value.startswith("To start: ") and "API version, e.g. 2024-10-21 (or set OPENAI_API_VERSION)"
                   in c.value for c in at.caption)
        at.text_input(key="eval-api-version").input(VERSION)
        _pick_metrics(at, lexical=["exact_match"], claims=["faithfulness"])
        at.text_input(key="eval-model").input(DEPLOYMENT)
        at.text_input(key="eval-key-input").input(KEY)
        at.run()
        assert at.number_input(key="eval-price-in").value is None and metric_checkbox(at, "Cost (estimate)") == \
            "unknown"
        assert any(c.value.startswith("A deployment's name is yours, so no list price applies") for c in at.caption)

        at.button(key="eval-check-judge").click()
        at.run()
        until_checked(at)
        assert any("the judge can run" in s.value for s in at.success)
        checked = server.request_count

        at.number_input(key="eval-price-in").set_value(0.15)
        at.number_input(key="eval-price-out").set_value(0.6)
        at.run()
        assert metric_checkbox(at, "Cost (estimate)").startswith("$")
        run_id, run = start_and_wait(at, store)
        requests = server.requests
    assert run["status"] == "finished", run["error"]
    assert (run["judge"], run["judge_model"]) == ("azure", DEPLOYMENT)
    cells = store.cursor().execute("SELECT DISTINCT status FROM scores WHERE run_id = ?", [run_id]).fetchall()
    assert cells == [("ok",)]
    assert len(requests) > checked
    for request in requests:
        assert request.path == f"/openai/deployments/{DEPLOYMENT}/chat/completions?api-version={VERSION}"
        assert request.headers["api-key"] == "<redacted>"
    config = json.loads(run["config"])
    assert (config["endpoint"], config["api_version"]) == (server.azure_endpoint, VERSION)
    assert config["price_usd_per_1m"] == {"input": 0.15, "output": 0.6}
    stored = store.cursor().execute("SELECT string_agg(coalesce(request, '') || coalesce(response, '') || "
                                    "coalesce(error, ''), '') FROM judge_calls WHERE run_id = ?", [run_id]).fetchall()
    assert KEY not in run["config"] and KEY not in stored[0][0]
    shown = " ".join(str(e.value) for e in (*at.caption, *at.success, *at.info, *at.error, *at.code))
    assert KEY not in shown
