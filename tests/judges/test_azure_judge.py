"""The azure judge (evaluators/judges/azure_judge.py): the OpenAI judge through the openai SDK's Azure client, against
the scripted server's Azure route on 127.0.0.1 (tests/helpers/openai_server.py): real runs through `evaluate()` and
the CLI, the deployment's URL, api-version and api-key header, a refused key, what it lacks, its stored config."""
from __future__ import annotations

import json
import re
import urllib.error
import urllib.request

import duckdb
import pytest

from evaluators import evaluate
from evaluators.judges import AzureJudge, OpenAIJudge, of_run
from evaluators.records.judgments import JudgeRefused
from evaluators.runs import lifecycle
from evaluators.store import close_store
from tests.helpers.cli import cli
from tests.helpers.openai_runs import openai_run_files, responder
from tests.helpers.openai_server import Reply, reasoning_model_rules, start_server

KEY = "sk-azure-key-never-stored-0123456789"
DEPLOYMENT = "ragscope-judge"  # a deployment's name says nothing of its model
VERSION = "2024-10-21"
METRICS = ["faithfulness", "context_precision", "judge_overall", "exact_match"]
ENV_NAMES = ("AZURE_OPENAI_ENDPOINT", "OPENAI_API_VERSION", "AZURE_OPENAI_API_KEY", "OPENAI_API_KEY",
             "OPENAI_BASE_URL")


@pytest.fixture
def azure(monkeypatch):
    """The scripted server holding KEY, answering every judge request (seed 000's replies); the environment the SDK
    reads pointing at it (no OPENAI_* key or base URL: the azure judge must not use them)."""
    for name in ENV_NAMES:
        monkeypatch.delenv(name, raising=False)
    with start_server() as server:
        server.api_key, server.responder = KEY, responder(refuse_q2=False)
        monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", server.azure_endpoint)
        monkeypatch.setenv("OPENAI_API_VERSION", VERSION)
        yield server


def _stored_text(db) -> str:
    """Everything a run stored that could hold a key: its config, its judge calls, its cells' details."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = [*con.execute("SELECT * FROM runs").fetchall(), *con.execute("SELECT * FROM judge_calls").fetchall(),
                *con.execute("SELECT detail FROM scores").fetchall()]
    finally:
        con.close()
    return json.dumps(rows, default=str)


def _assert_azure_requests(server, deployment=DEPLOYMENT) -> None:
    requests = server.requests
    assert requests, "no request reached the server"
    for request in requests:
        assert (request.method, request.path) == (
            "POST", f"/openai/deployments/{deployment}/chat/completions?api-version={VERSION}")
        # the key came in api-key (the server answers 401 otherwise), and no Authorization went with it
        assert request.headers["api-key"] == "<redacted>" and "authorization" not in request.headers


def test_an_azure_run_scores_every_cell_through_the_deployment_route_and_stores_no_key(azure, tmp_path, monkeypatch):
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    golden, outputs = openai_run_files(tmp_path)
    db = tmp_path / "azure.duckdb"
    result = evaluate(golden, outputs, metrics=METRICS, judge=AzureJudge(model=DEPLOYMENT), db=db)
    run, scores = result.run, result.scores
    close_store(db)

    assert run["status"] == "finished" and (run["judge"], run["judge_model"]) == ("azure", DEPLOYMENT)
    assert len(scores) == 2 * len(METRICS)
    assert set(scores["status"]) <= {"ok", "not_applicable"} and (scores["status"] == "ok").sum() >= 6
    assert scores[scores["judge"] == "azure"]["metric"].nunique() == 3  # every judged metric, by this judge
    q1 = scores[scores["question_id"] == "q1"].set_index("metric")
    assert q1.loc["faithfulness", "value"] == 1.0  # seed 000's case study: both answer claims supported
    _assert_azure_requests(azure)
    # the run's config brings the judge back (a resume reaches the same deployment), the key is nowhere
    config = json.loads(run["config"])
    assert (config["endpoint"], config["api_version"]) == (azure.azure_endpoint, VERSION)
    assert "base_url" not in config
    judge = of_run(run)
    assert type(judge) is AzureJudge
    assert (judge.model, judge.endpoint, judge.api_version) == (DEPLOYMENT, azure.azure_endpoint, VERSION)
    assert judge.server()["client_factory"] is not None and judge.price is None
    assert KEY not in _stored_text(db)


def test_a_wrong_key_stops_the_run_with_the_refusal_and_what_to_check(azure, tmp_path, monkeypatch):
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "sk-wrong-azure-key")
    golden, outputs = openai_run_files(tmp_path)
    db = tmp_path / "refused.duckdb"
    with pytest.raises(JudgeRefused, match=r"refused the API key \(HTTP 401.*check AZURE_OPENAI_API_KEY"):
        evaluate(golden, outputs, metrics=["faithfulness", "exact_match"], judge=AzureJudge(model=DEPLOYMENT), db=db)
    close_store(db)
    con = duckdb.connect(str(db), read_only=True)
    try:
        status, error = con.execute("SELECT status, error FROM runs").fetchall()[0]
        judged = con.execute("SELECT count(*) FROM scores WHERE metric = 'faithfulness'").fetchall()[0][0]
    finally:
        con.close()
    # the run stopped at the first refusal, its judged cells still to do (a resume with the right key scores them)
    assert status == "failed" and "check AZURE_OPENAI_API_KEY" in error and azure.azure_endpoint in error
    assert judged == 0 and azure.request_count <= 2
    assert "sk-wrong-azure-key" not in _stored_text(db)


def test_a_deployment_of_a_reasoning_model_under_any_name_is_judged_once_its_400s_are_learned(azure, tmp_path,
                                                                                             monkeypatch):
    """Its name does not say it is a reasoning model: the temperature it refuses is dropped after one 400."""
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    azure.rules = reasoning_model_rules
    golden, outputs = openai_run_files(tmp_path)
    db = tmp_path / "reasoning.duckdb"
    result = evaluate(golden, outputs, metrics=["faithfulness", "exact_match"],
                      judge=AzureJudge(model=DEPLOYMENT, concurrency=1), db=db)
    run, scores = result.run, result.scores
    close_store(db)
    assert run["status"] == "finished" and set(scores["status"]) <= {"ok", "not_applicable"}
    assert json.loads(run["config"])["server_params"]["temperature"] is None
    assert "temperature" in azure.requests[0].body and "temperature" not in azure.requests[-1].body
    _assert_azure_requests(azure)


def test_what_the_azure_judge_lacks_and_what_it_refuses_are_named(monkeypatch):
    for name in ENV_NAMES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")  # the OpenAI judge's key is not the azure judge's
    problems = lifecycle.judge_problems(AzureJudge())
    assert [p.about for p in problems] == ["model", "endpoint", "api_version", "api_key"]
    text = " ".join(p.message for p in problems)
    for name in ("AZURE_OPENAI_ENDPOINT", "OPENAI_API_VERSION", "AZURE_OPENAI_API_KEY", "deployment"):
        assert name in text
    assert lifecycle.judge_problems(AzureJudge("d", endpoint="https://r.openai.azure.com", api_version=VERSION),
                                    api_key="lent") == []
    # the Batch API and a base URL: refused before anything is read, with the reason
    spec = lifecycle.RunSpec(AzureJudge("d", batch=True, base_url="http://x/v1"), metrics=["faithfulness"])
    found = {p.about: p.message for p in spec.problems()}
    assert set(found) == {"batch", "base_url"} and "Global Batch deployment" in found["batch"]


def test_a_deployment_named_like_a_model_has_no_list_price_unless_prices_are_given():
    assert OpenAIJudge(model="gpt-4o-mini").price is not None
    assert AzureJudge(model="gpt-4o-mini").price is None
    given = AzureJudge(model="gpt-4o-mini", price_in=0.2, price_out=0.8)
    assert (given.price.input, given.price.output, given.price.cached_input) == (0.2, 0.8, None)
    with pytest.raises(ValueError, match="give both the input and the output price"):
        AzureJudge(model="gpt-4o-mini", price_in=0.2).price
    restored = AzureJudge.of_config("gpt-4o-mini", given.config())
    assert restored.price == given.price and restored.endpoint is None  # none was given nor in the environment


# -- the test server's Azure route ---------------------------------------------------------------------------------

def _post(url: str, headers: dict) -> int:
    body = json.dumps({"model": "x", "messages": [{"role": "user", "content": "hi"}]}).encode()
    request = urllib.request.Request(url, body, {"Content-Type": "application/json", **headers}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status
    except urllib.error.HTTPError as refused:
        return refused.code


def test_the_servers_azure_route_wants_an_api_version_and_the_key_in_api_key(azure):
    route = f"{azure.azure_endpoint}/openai/deployments/{DEPLOYMENT}/chat/completions"
    assert _post(route, {"api-key": KEY}) == 404  # no api-version: Azure answers 404
    assert _post(f"{route}?api-version={VERSION}", {"Authorization": f"Bearer {KEY}"}) == 401
    assert _post(f"{route}?api-version={VERSION}", {"api-key": KEY}) == 200
    assert all(KEY not in json.dumps(r.headers) for r in azure.requests)


# -- the CLI -------------------------------------------------------------------------------------------------------

def test_the_cli_runs_the_azure_judge_and_a_resume_reaches_the_stored_deployment(azure, tmp_path, monkeypatch):
    golden, outputs = openai_run_files(tmp_path)
    db = tmp_path / "cli.duckdb"
    endpoint = azure.azure_endpoint
    for name in ("AZURE_OPENAI_ENDPOINT", "OPENAI_API_VERSION"):  # the flags say where, this time
        monkeypatch.delenv(name)
    args = ("run", "--golden", golden, "--outputs", outputs, "--judge", "azure", "--model", DEPLOYMENT,
            "--metrics", "faithfulness,exact_match", "--concurrency", "1")
    first = cli(*args, "--azure-endpoint", endpoint, "--api-version", VERSION, db=db,
                env={"AZURE_OPENAI_API_KEY": "sk-wrong-azure-key"})
    assert first.returncode == 1, first.stderr
    assert "check AZURE_OPENAI_API_KEY" in first.stderr and "sk-wrong" not in first.stderr + first.stdout
    run_id = re.search(r"^run (\S+)$", first.stderr, re.MULTILINE).group(1)
    # the resume is given neither flags nor environment: the run's config holds the endpoint and version
    again = cli("run", "--resume", run_id, db=db, env={"AZURE_OPENAI_API_KEY": KEY})
    assert again.returncode == 0, again.stderr
    assert "4 cells scored or not applicable" in again.stdout and KEY not in again.stdout + again.stderr
    _assert_azure_requests(azure)
    assert KEY not in _stored_text(db)


def test_the_cli_names_what_the_azure_judge_lacks_and_refuses_its_batch_api(tmp_path, monkeypatch):
    for name in ENV_NAMES:
        monkeypatch.delenv(name, raising=False)
    golden, outputs = openai_run_files(tmp_path)
    files = ("--golden", golden, "--outputs", outputs)
    lacking = cli("run", *files, "--judge", "azure", db=tmp_path / "none.duckdb")
    assert lacking.returncode == 2
    assert ("--judge azure needs --model and --azure-endpoint (or $AZURE_OPENAI_ENDPOINT) and --api-version (or "
            "$OPENAI_API_VERSION) and AZURE_OPENAI_API_KEY in the environment (the key is never stored)"
            in lacking.stderr)
    batch = cli("run", *files, "--judge", "azure", "--model", "d", "--batch", "--estimate")
    assert batch.returncode == 2 and "the azure judge does not use the Batch API" in batch.stderr
    wrong = cli("run", *files, "--judge", "openai", "--model", "m", "--azure-endpoint", "https://r", "--estimate")
    assert wrong.returncode == 2 and "apply to --judge azure, not --judge openai" in wrong.stderr
    assert not (tmp_path / "none.duckdb").exists()


def test_the_estimate_of_an_azure_run_says_its_price_is_unknown_unless_given(tmp_path):
    golden, outputs = openai_run_files(tmp_path)
    args = ("run", "--golden", golden, "--outputs", outputs, "--judge", "azure", "--model", "gpt-4o-mini",
            "--estimate")
    unknown = cli(*args)
    assert unknown.returncode == 0, unknown.stderr
    assert "cost: unknown, no list price for model 'gpt-4o-mini'" in unknown.stderr
    priced = cli(*args, "--price-in", "0.15", "--price-out", "0.6")
    assert priced.returncode == 0 and "cost, estimated: ~$" in priced.stderr
    assert "$0.15 in, $0.6 out per 1M tokens" in priced.stderr and "list price" not in priced.stderr


def test_judge_check_of_an_azure_deployment(azure):
    azure.responder = lambda body: Reply.json({"ok": True})
    # the endpoint from the environment, the version by flag (the CLI helper hides OPENAI_* variables)
    flags = ("judge", "check", "--judge", "azure", "--model", "gpt-4o-mini", "--api-version", VERSION)
    done = cli(*flags, "--json", env={"AZURE_OPENAI_API_KEY": KEY})
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["can_run"] is True and report["base_url"] == azure.azure_endpoint
    assert report["price_usd_per_1m"] is None  # a deployment's name is no model's
    _assert_azure_requests(azure, "gpt-4o-mini")
    refused = cli(*flags, env={"AZURE_OPENAI_API_KEY": "sk-wrong-azure-key"})
    assert refused.returncode == 1 and "check AZURE_OPENAI_API_KEY" in refused.stderr + refused.stdout
    for done_ in (done, refused):
        assert KEY not in done_.stdout + done_.stderr and "sk-wrong" not in done_.stdout + done_.stderr
