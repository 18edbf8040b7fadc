"""`python -m evaluators judge calibrate`: the estimate first, the table, the result stored with the judge and model;
exit 0 done, 1 the judge could not run, 2 bad arguments; the key never printed or stored. The OpenAI judge runs
against the scripted server on 127.0.0.1."""
import json

import duckdb
import pytest

from evaluators.judges import OfflineJudge
from evaluators.runs import calibrate

from tests.helpers.calibration import KEY, responder
from tests.helpers.cli import cli
from tests.helpers.openai_server import start_server

N = "20"


def calibrations(db):
    con = duckdb.connect(str(db), read_only=True)
    try:
        return (con.execute("SELECT judge, judge_model, n_items, status, judge_config FROM calibrations").fetchall(),
                con.execute("SELECT count(*) FROM calibration_results").fetchall()[0][0])
    finally:
        con.close()


def test_the_offline_judge_calibrated_printed_and_stored(tmp_path):
    db = tmp_path / "r.duckdb"
    done = cli("judge", "calibrate", "--judge", "offline", "--sample", N, "--json", db=db)
    assert done.returncode == 0, done.stderr
    assert "calibration: 20 labelled items (seed 0)" in done.stderr
    result = json.loads(done.stdout)
    assert result["n_items"] == 20 and result["headline"].startswith("The offline judge agrees with people:")
    assert [r["label"] for r in result["rows"]][0] == "correctness"
    (stored,), n_rows = calibrations(db)
    assert stored[:4] == ("offline", None, 20, "finished") and n_rows == len(result["rows"])
    text = cli("judge", "calibrate", "--judge", "offline", "--sample", N, db=db)
    assert text.returncode == 0 and "offline judge" in text.stdout and "token F1" in text.stdout


@pytest.mark.parametrize("args, message", [
    (("--judge", "offline", "--sample", "0"), "the sample must be a whole number of items, 1 or more, not 0"),
    (("--judge", "offline", "--model", "gpt-5-mini"), "--model apply to an LLM judge"),
    (("--judge", "openai",), "--judge openai needs --model and OPENAI_API_KEY"),
    (("--judge", "openai", "--model", "m", "--reasoning-effort", "huge"), "reasoning"),
    (("--judge", "openai", "--model", "m", "--price-in", "1", "--price-out", "1", "--max-cost", "0.00001",
      "--estimate"), "above its budget"),
])
def test_bad_arguments_exit_2_and_store_nothing(tmp_path, args, message):
    db = tmp_path / "r.duckdb"
    refused = cli("judge", "calibrate", *args, db=db)
    assert refused.returncode == 2 and message in refused.stderr, refused.stderr
    assert not db.exists()


def _calibrate(server, db, *extra, key=KEY):
    return cli("judge", "calibrate", "--model", "test-model", "--base-url", server.base_url, "--sample", N,
               "--price-in", "1", "--price-out", "1", "--concurrency", "2", *extra, db=db,
               env={"OPENAI_API_KEY": key})


def test_the_openai_judge_estimate_first_then_calibrated_failed_items_counted_and_the_key_nowhere(tmp_path):
    db = tmp_path / "r.duckdb"
    drawn = calibrate.plan(OfflineJudge(), sample=int(N)).items  # the same N and seed: the items the CLI draws
    refused = [i.answer for i in drawn if i.set == "factcheck_stance"][:2]
    with start_server() as server:
        server.responder = responder(refuse=refused)
        estimate = _calibrate(server, db, "--estimate")
        assert estimate.returncode == 0 and "cost, estimated: ~$" in estimate.stderr
        assert server.request_count == 0 and not db.exists()
        done = _calibrate(server, db)
    assert done.returncode == 0, done.stderr
    assert done.stderr.index("cost, estimated") < len(done.stderr)
    assert done.stdout.startswith("test-model agrees with people: correctness AUROC")
    assert "the judge's calls cost $" in done.stdout and "18 of 20 items judged; 2 not (failed cells" in done.stdout
    factcheck, = [line for line in done.stdout.splitlines() if "factcheck_stance" in line]
    assert factcheck.endswith(" 2 of 4")  # n of N: 2 refused, left out, not scored 0
    (stored,), _ = calibrations(db)
    assert stored[:4] == ("openai", "test-model", 20, "finished") and server.base_url in stored[4]
    assert KEY not in done.stdout + done.stderr and KEY.encode() not in db.read_bytes()


def test_a_judge_whose_key_is_refused_exits_1_without_printing_it(tmp_path):
    db = tmp_path / "r.duckdb"
    with start_server() as server:
        server.api_key = "sk-the-right-one"
        refused = _calibrate(server, db)
    assert refused.returncode == 1 and "the judge could not run" in refused.stderr, refused.stderr
    assert KEY not in refused.stdout + refused.stderr
    assert calibrations(db)[0] == []


def test_an_azure_deployment_is_calibrated_through_its_route(tmp_path):
    db = tmp_path / "r.duckdb"
    with start_server() as server:
        server.api_key, server.responder = KEY, responder()
        done = cli("judge", "calibrate", "--judge", "azure", "--model", "my-deployment", "--azure-endpoint",
                   server.azure_endpoint, "--api-version", "2024-10-21", "--sample", N, "--price-in", "1",
                   "--price-out", "1", "--concurrency", "2", db=db, env={"AZURE_OPENAI_API_KEY": KEY})
        paths = {r.path for r in server.requests}
    assert done.returncode == 0, done.stderr
    assert paths == {"/openai/deployments/my-deployment/chat/completions?api-version=2024-10-21"}
    assert done.stdout.startswith("my-deployment agrees with people:")
    (stored,), _ = calibrations(db)
    assert stored[:4] == ("azure", "my-deployment", 20, "finished") and server.azure_endpoint in stored[4]
    assert KEY not in done.stdout + done.stderr and KEY.encode() not in db.read_bytes()
    mixed = cli("judge", "calibrate", "--judge", "offline", "--api-version", "2024-10-21", db=tmp_path / "o.duckdb")
    assert mixed.returncode == 2 and "--api-version apply to an LLM judge" in mixed.stderr
