"""The command line as a user runs it (called in-process, tests/helpers/cli.py; in a process where that is what is
tested), real DuckDB files."""
import json

import duckdb
import pandas as pd
import pytest

from evaluators.judges import prompts
from evaluators.metrics.ranking import RANK_METRICS
from tests.helpers.shared_db import held_elsewhere
from tests.helpers.cli import DEMO, ROOT, tiny_files, cli, table_counts

MALFORMED = ROOT / "tests" / "malformed"


def test_help_explains_commands_and_exit_codes():
    out = cli("--help")
    assert out.returncode == 0
    for word in ("run", "export", "metrics", "demo", "exit codes", "RAGSCOPE_DB"):
        assert word in out.stdout
    run_help = cli("run", "--help").stdout
    for flag in ("--golden", "--outputs", "--resume", "--retry-failed", "--metrics", "--context-sep"):
        assert flag in run_help


def test_run_on_the_demo_data_fills_the_tables(tmp_path):
    db = tmp_path / "demo.duckdb"
    out = cli("run", "--golden", str(DEMO / "novel_44557_golden.csv"),
              "--outputs", str(DEMO / "novel_44557_outputs.jsonl"), db=db)
    assert out.returncode == 0, out.stderr
    counts = table_counts(db)
    assert counts["golden_items"] == 103 and counts["rag_outputs"] == 206 and counts["runs"] == 1
    # every metric but the rank metrics (the demo's golden set names no relevant document), for every sample
    metrics = [m["id"] for m in json.loads(cli("metrics", "--json").stdout)]
    assert counts["scores"] == 206 * len([m for m in metrics if m not in RANK_METRICS])
    assert "basic_search" in out.stdout and "local_search" in out.stdout and "(n=" in out.stdout
    assert "cost" not in out.stdout and "$" not in out.stdout  # the offline judge: no money line
    # stderr is a pipe here: progress comes as lines (MetricLines), the last one whole
    assert f"every metric scored · {counts['scores']:,} of {counts['scores']:,} cells (100%)" in out.stderr


def test_run_on_the_ragchecker_file_with_golden_and_answers_in_one_file(tmp_path, shared_data):
    db = tmp_path / "rc.duckdb"
    out = cli("run", "--golden", str(shared_data / "ragchecker_examples" / "checking_inputs.json"),
              "--metrics", "exact_match,rouge_l,number_match", db=db)
    assert out.returncode == 0, out.stderr
    counts = table_counts(db)
    assert counts["datasets"] == 1 and counts["golden_items"] == 2 and counts["rag_outputs"] == 2
    assert counts["scores"] == 2 * 3


def test_bad_input_lists_every_problem_and_writes_nothing(tmp_path):
    db = tmp_path / "bad.duckdb"
    golden = tmp_path / "gold.jsonl"
    golden.write_text('{"question_id": "a", "question": "Q?", "reference": "R"}\n{"question_id": "a", "question": "Q2?"}\n')
    outputs = tmp_path / "out.jsonl"
    outputs.write_text('{"question_id": "a", "answer": "x", "contexts": ["c"]}\n{"question_id": "b", "answer": "y"}\n')
    out = cli("run", "--golden", str(golden), "--outputs", str(outputs), db=db)
    assert out.returncode == 2
    assert "gold.jsonl" in out.stderr and "row 2" in out.stderr
    assert "nothing was loaded" in out.stderr
    assert not db.exists() or table_counts(db)["datasets"] == 0


def test_a_golden_file_without_answers_asks_for_the_outputs(tmp_path):
    golden, _ = tiny_files(tmp_path)
    out = cli("run", "--golden", str(golden), db=tmp_path / "none.duckdb")
    assert out.returncode == 2 and "gold.jsonl holds no answers" in out.stderr and "--outputs PATH" in out.stderr
    assert not (tmp_path / "none.duckdb").exists()


def test_numbers_no_run_can_use_are_refused_for_the_offline_judge_too(tmp_path):
    golden, outputs = tiny_files(tmp_path)
    for option in (("--concurrency", "0"), ("--repeats", "0"), ("--timeout", "-1")):
        out = cli("run", "--golden", str(golden), "--outputs", str(outputs), *option, db=tmp_path / "none.duckdb")
        assert out.returncode == 2 and f"{option[0][2:]} must be" in out.stderr, (option, out.stderr)
    assert not (tmp_path / "none.duckdb").exists()


def test_unknown_metric_and_missing_run_are_usage_errors(tmp_path):
    db = tmp_path / "x.duckdb"
    out = cli("run", "--golden", str(DEMO / "novel_44557_golden.csv"), "--outputs",
              str(DEMO / "novel_44557_outputs.jsonl"), "--metrics", "exact_match,bogus", db=db)
    assert out.returncode == 2 and "bogus" in out.stderr
    out = cli("export", "run-nope", db=db)
    assert out.returncode == 2 and "no run" in out.stderr


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("demo") / "demo.duckdb"
    out = cli("demo", "graphrag", db=db)  # the one demo these tests know (all of them take minutes)
    assert out.returncode == 0, out.stderr
    run_id = out.stdout.split()[0]
    assert "simulated outputs" in out.stdout and "computed in" in out.stdout
    again = cli("demo", "graphrag", db=db)  # idempotent: the finished demo run is reused
    assert again.returncode == 0 and again.stdout.split()[0] == run_id and "already finished" in again.stdout
    return db, run_id


@pytest.mark.parametrize("fmt", ["csv", "parquet", "json"])
def test_export_writes_every_score_cell(demo_db, tmp_path, fmt):
    db, run_id = demo_db
    out_file = tmp_path / f"scores.{fmt}"
    out = cli("export", run_id, "--out", str(out_file), db=db)
    assert out.returncode == 0, out.stderr
    frame = {"csv": pd.read_csv, "parquet": pd.read_parquet, "json": pd.read_json}[fmt](out_file)
    assert len(frame) == table_counts(db)["scores"]
    assert {"question_id", "question_type", "method", "metric", "value", "status"} <= set(frame.columns)


def test_wide_export_has_one_row_per_sample(demo_db, tmp_path):
    db, run_id = demo_db
    out_file = tmp_path / "wide.csv"
    assert cli("export", run_id, "--wide", "--out", str(out_file), db=db).returncode == 0
    frame = pd.read_csv(out_file)
    assert len(frame) == 206 and "exact_match" in frame.columns


def test_metrics_lists_the_catalogue_with_scale_and_seed():
    rows = json.loads(cli("metrics", "--json").stdout)
    ids = {r["id"] for r in rows}
    assert {"exact_match", "keyword_coverage", "number_match", "answer_completeness", "citation_quality",
            "checks_pass_rate", "rouge_l", "dont_know"} <= ids
    assert all(r["seed"] and r["scale"] and r["formula"] for r in rows)


def test_a_database_held_by_another_process_exits_3(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGSCOPE_DB_WAIT", "1")  # how long the CLI waits for the holder to let go
    db = tmp_path / "held.duckdb"
    with held_elsewhere(db):
        out = cli("runs", db=db)
        assert out.returncode == 3 and "in use by another process" in out.stderr
        assert out.stderr.count("the database is busy") == 1  # said once while it waited


def test_the_same_method_answering_in_two_files_is_refused(tmp_path):
    db = tmp_path / "dup.duckdb"
    golden = tmp_path / "gold.jsonl"
    golden.write_text('{"question_id": "a", "question": "Q?", "reference": "R"}\n')
    for name in ("one.jsonl", "two.jsonl"):
        (tmp_path / name).write_text('{"question_id": "a", "answer": "x", "contexts": []}\n')
    out = cli("run", "--golden", str(golden), "--outputs", f"local={tmp_path / 'one.jsonl'}",
              "--outputs", f"local={tmp_path / 'two.jsonl'}", db=db)
    assert out.returncode == 2
    assert "two.jsonl, row 1" in out.stderr and "already has an answer from method 'local' in one.jsonl" in out.stderr
    assert not db.exists()


def test_labels_import_end_to_end(tmp_path):
    from evaluators.store import close_store
    from tests.helpers.tiny_run import GOOD_ROWS, HEADER, tiny_run

    db = tmp_path / "labels.duckdb"
    run_id = tiny_run(db, tmp_path)
    close_store(db)  # the CLI is another process: DuckDB lets one hold the file
    bad = tmp_path / "bad.csv"
    bad.write_text(HEADER + "\n".join(GOOD_ROWS) + "\nq9,local,ann,3,,wrong\nq1,local,,x,,\n")
    out = cli("labels", "import", str(bad), "--run", run_id, db=db)
    assert out.returncode == 2, out.stderr
    assert "bad.csv, row 4, field 'question_id': question id 'q9'" in out.stderr
    assert "bad.csv, row 5, field 'annotator': the annotator is empty" in out.stderr
    assert "bad.csv, row 5, field 'faithfulness': rating 'x' is not a number" in out.stderr

    def n_annotations():
        con = duckdb.connect(str(db), read_only=True)
        try:
            return con.execute("SELECT count(*) FROM annotations").fetchall()[0][0]
        finally:
            con.close()

    assert n_annotations() == 0
    good = tmp_path / "ratings.csv"
    good.write_text(HEADER + "\n".join(GOOD_ROWS) + "\n")
    out = cli("labels", "import", str(good), "--run", run_id, db=db)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == (f"imported 6 ratings of 2 dimensions (correctness, faithfulness) by 2 annotators "
                                  f"from ratings.csv into run {run_id}")
    again = cli("labels", "import", str(good), "--run", run_id, db=db)
    assert again.returncode == 0 and "imported into run" in again.stdout and "nothing stored again" in again.stdout
    assert n_annotations() == 6
    unknown = cli("labels", "import", str(good), "--run", "run-nope", db=db)
    assert unknown.returncode == 2 and "no run 'run-nope'" in unknown.stderr


def test_deeply_nested_json_is_a_listed_problem_not_a_traceback(tmp_path):
    from evaluators.store import close_store
    from tests.helpers.tiny_run import tiny_run

    db = tmp_path / "deep.duckdb"
    out = cli("run", "--golden", str(MALFORMED / "deep_nesting.json"), "--outputs", str(MALFORMED / "deep_nesting.jsonl"),
              "--outputs", str(MALFORMED / "deep_contexts.csv"), db=db)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    for where in ("deep_nesting.json, row 1, field 'reference'", "deep_nesting.jsonl, row 2, field 'contexts'",
                  "deep_contexts.csv, row 1, field 'contexts'"):
        assert f"{where}: " in out.stderr and "nested more than 64 levels deep" in out.stderr.split(where)[1]
    assert not db.exists()

    run_id = tiny_run(db, tmp_path)
    close_store(db)
    out = cli("labels", "import", str(MALFORMED / "deep_labels.jsonl"), "--run", run_id, db=db)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert "deep_labels.jsonl, row 1, field 'faithfulness': the JSON is nested more than 64 levels deep" in out.stderr

# -- progress per metric, prices and cost ---------------------------------------------------------


def _labels(text):
    """The bar's labels in the order drawn (tqdm redraws a line after a carriage return)."""
    labels = [line.split(":")[0].strip() for line in text.split("\r") if "cell" in line]
    return [x for i, x in enumerate(labels) if i == 0 or labels[i - 1] != x]


def test_the_bar_counts_cells_and_names_each_metric_as_it_is_scored(tmp_path):
    import io
    import threading

    from evaluators import loaders
    from evaluators.runs import engine, lifecycle
    from evaluators.cli import MetricBar
    from evaluators.store import close_store, open_store

    golden, outputs = tiny_files(tmp_path)
    db = tmp_path / "bar.duckdb"
    store = open_store(db)
    try:
        golden_id = store.save_dataset(loaders.load(golden)).dataset_id
        outputs_id = store.save_dataset(loaders.load(outputs, role="outputs")).dataset_id
        run_id = lifecycle.start_stored(store, golden_id, [outputs_id],
                                        lifecycle.RunSpec(metrics=["exact_match", "rouge_l", "number_match"]))
        out = io.StringIO()
        bar = MetricBar(file=out)
        engine.execute_run(store, run_id, batch_size=2, on_metric=bar)  # 3 samples: batches of 2 and 1
        bar.close()
        # the catalogue's order: exact_match, number_match, rouge_l
        # first every metric's count, then each metric as it starts on a batch and when it is done with it
        assert _labels(out.getvalue()) == [
            "exact_match 0/3", "number_match 0/3", "rouge_l 0/3",
            "exact_match 0/3", "exact_match 2/3", "number_match 0/3", "number_match 2/3", "rouge_l 0/3", "rouge_l 2/3",
            "exact_match 2/3", "exact_match 3/3", "number_match 2/3", "number_match 3/3", "rouge_l 2/3",
            "every metric scored"]
        assert "9/9" in out.getvalue().split("\r")[-1]

        # A resumed run: the cells of the session before are the bar's start, not counted into its rate.
        again = lifecycle.start_stored(store, golden_id, [outputs_id],
                                       lifecycle.RunSpec(metrics=["exact_match", "rouge_l"]))
        cancel = threading.Event()
        engine.execute_run(store, again, on_metric=lambda m, d, *_: d and cancel.set(), cancel=cancel)
        resumed = MetricBar(file=io.StringIO())
        engine.execute_run(store, again, on_metric=resumed)
        assert (resumed.bar.initial, resumed.bar.n, resumed.bar.total) == (3, 6, 6)
        resumed.close()
    finally:
        close_store(db)


def test_prices_are_refused_where_they_cannot_apply(tmp_path):
    golden, outputs = tiny_files(tmp_path)
    db = tmp_path / "p.duckdb"
    offline = cli("run", "--golden", str(golden), "--outputs", str(outputs), "--price-in", "1", "--price-out", "2",
                  db=db)
    assert offline.returncode == 2 and "offline judge costs nothing" in offline.stderr
    for given in (("--price-in", "1"), ("--price-cached-in", "0.1"), ("--batch",)):
        resumed = cli("run", "--resume", "run-x", *given, db=db)
        assert resumed.returncode == 2 and "keeps the prices and the Batch API mode it was started with" in resumed.stderr
    half = cli("run", "--golden", str(golden), "--outputs", str(outputs), "--judge", "openai", "--model", "my-model",
               "--price-in", "1", "--estimate", db=db)
    assert half.returncode == 2 and "no list price for model 'my-model': give both" in half.stderr
    assert not db.exists()


def test_the_estimate_prices_the_tokens_at_the_list_or_the_given_price(tmp_path):
    from evaluators import loaders
    from evaluators.runs import planning
    from evaluators.judges import OpenAIJudge, prices
    from evaluators.runs.estimate import estimate
    from evaluators.metrics import resolve

    golden, outputs = tiny_files(tmp_path)
    samples = planning.plan(loaders.load(golden).golden, loaders.load(outputs, role="outputs").outputs).samples
    est = estimate(samples, OpenAIJudge("m"), resolve(["faithfulness"]))
    args = ("run", "--golden", str(golden), "--outputs", str(outputs), "--judge", "openai", "--metrics", "faithfulness",
            "--estimate")
    listed = cli(*args, "--model", "gpt-4o-mini")
    assert listed.returncode == 0, listed.stderr
    amount = prices.usd(est.cost(prices.Price(0.15, 0.60, 0.075)))  # cached input at its own price
    assert (f"cost, estimated: ~{amount} at $0.15 in, $0.075 cached in, $0.6 out per 1M tokens (list price of "
            f"gpt-4o-mini as of {prices.AS_OF}); {est.cache_note().removeprefix('; ')}\n") in listed.stderr
    assert est.total_cached_input_tokens > 0
    given = cli(*args, "--model", "my-model", "--price-in", "3", "--price-out", "12")
    amount = prices.usd(est.cost(prices.Price(3, 12)))
    assert f"cost, estimated: ~{amount} at $3 in, $12 out per 1M tokens{est.cache_note()}\n" in given.stderr
    unknown = cli(*args, "--model", "my-model")
    assert unknown.returncode == 0 and "cost: unknown, no list price for model 'my-model'" in unknown.stderr
    assert "$" not in unknown.stderr


def test_an_llm_judged_run_records_its_prices_and_reports_its_cost(tmp_path):

    from evaluators.judges import prices
    from tests.helpers.openai_server import Reply, start_server
    from tests.helpers.seed_000 import SEED_000_EXTRACTION, SEED_000_VERIFICATION

    golden, outputs = tiny_files(tmp_path)
    db = tmp_path / "cost.duckdb"
    key = "sk-never-stored"

    def run():
        return cli("run", "--golden", golden, "--outputs", outputs, "--judge", "openai", "--model", "gpt-4o-mini",
                   "--price-in", "2", "--price-out", "8", "--metrics", "faithfulness,exact_match",
                   "--base-url", server.base_url, db=db, env={"OPENAI_API_KEY": key})

    with start_server() as server:
        server.responder = lambda body: Reply.json(SEED_000_EXTRACTION if prompts.task_of(body["messages"])
                                                   == "extraction" else SEED_000_VERIFICATION)
        first = run()
        assert first.returncode == 0, first.stderr
        again = run()  # the same inputs: every reply comes from the judge cache
        assert again.returncode == 0, again.stderr
    con = duckdb.connect(str(db), read_only=True)
    try:
        runs = con.execute("SELECT run_id, config FROM runs ORDER BY created_at").fetchall()
        paid = con.execute("SELECT sum(input_tokens), sum(output_tokens) FROM judge_calls WHERE run_id = ? AND NOT "
                           "cached", [runs[0][0]]).fetchall()[0]
        cached = con.execute("SELECT count(*) FILTER (cached), count(*) FROM judge_calls WHERE run_id = ?",
                             [runs[1][0]]).fetchall()[0]
    finally:
        con.close()
    assert all(json.loads(config)[prices.CONFIG_KEY] == {"input": 2.0, "output": 8.0} and key not in config
               for _, config in runs)
    assert paid[0] > 0 and paid[1] > 0
    amount = prices.usd(prices.cost(paid[0], paid[1], prices.Price(2, 8)))
    assert (f"judge calls 6 (+0 cached, 0 failed), tokens {paid[0]:,} in, {paid[1]:,} out; cost {amount} at $2 in, "
            f"$8 out per 1M tokens") in first.stdout
    assert cached == (6, 6) and "judge calls 0 (+6 cached, 0 failed), tokens 0 in, 0 out; cost $0.00" in again.stdout
    # stderr is a pipe: progress lines (MetricLines), the last one with the samples the LLM judge has judged
    assert "every metric scored · 6 of 6 cells (100%)" in first.stderr and "3 samples judged" in first.stderr


def test_the_estimate_counts_every_repeat_and_bad_repeats_are_refused(tmp_path):
    golden, outputs = tiny_files(tmp_path)
    args = ("run", "--golden", str(golden), "--outputs", str(outputs), "--judge", "openai", "--model", "gpt-4o-mini",
            "--metrics", "judge_overall", "--estimate")
    once, thrice = cli(*args), cli(*args, "--repeats", "3")
    assert "3 holistic)" in once.stderr and "9 holistic)" in thrice.stderr  # 3 samples
    bad = cli(*args, "--repeats", "0")
    assert bad.returncode == 2 and "repeats must be a whole number of 1 or more" in bad.stderr


def test_numbers_and_metric_lists_are_checked_before_anything_is_stored(tmp_path):
    """Each bad option exits 2 naming it, sends no judge request and leaves the database as it was (a
    concurrency of 0 used to wait for ever; -3 stored a failed run; ',,' a finished run of no metric).
    The rules themselves are lifecycle.RunSpec's (tests/runs/test_options.py)."""

    from evaluators import loaders
    from evaluators.store import close_store, open_store
    from tests.helpers.openai_server import start_server

    golden, outputs = tiny_files(tmp_path)
    db = tmp_path / "kept.duckdb"
    store = open_store(db)
    store.save_dataset(loaders.load(golden, role="golden"))
    close_store(db)
    before = table_counts(db)
    bad = {("--concurrency", "0"): "concurrency must be a whole number of 1 or more (judge calls in flight at once)",
           ("--concurrency", "-3"): "concurrency must be a whole number of 1 or more",
           ("--metrics", ",,"): "no metric chosen"}
    with start_server() as server:
        for option, message in bad.items():
            out = cli("run", "--golden", golden, "--outputs", outputs, "--judge", "openai", "--model", "m",
                      "--base-url", server.base_url, *option, db=db, env={"OPENAI_API_KEY": "sk-test"})
            assert out.returncode == 2 and message in out.stderr, (option, out.stderr)
        assert server.request_count == 0
    assert table_counts(db) == before


def test_the_advice_for_a_file_in_another_encoding_works_as_given(tmp_path):
    """cp1252.csv (Excel on Windows) read as UTF-8: the message advises --encoding, and running it works."""
    import re

    from evaluators.store import close_store
    from tests.helpers.tiny_run import HEADER, GOOD_ROWS, tiny_run

    db = tmp_path / "enc.duckdb"
    outputs = tmp_path / "out.csv"
    outputs.write_bytes("question_id,answer\nq1,In Penzance\nq2,Dinah Craik née Mulock\n".encode("cp1252"))
    run = ("run", "--golden", str(MALFORMED / "cp1252.csv"), "--outputs", f"rag={outputs}", "--metrics", "exact_match")
    out = cli(*run, db=db)
    assert out.returncode == 2 and "cp1252.csv: the file is not valid UTF-8 text" in out.stderr, out.stderr
    advised = re.search(r"command line: (--encoding \S+?);", out.stderr).group(1).split()
    assert advised == ["--encoding", "cp1252"] and not db.exists()
    out = cli(*run, *advised, db=db)
    assert out.returncode == 0, out.stderr
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert con.execute("SELECT question FROM golden_items ORDER BY question_id").fetchall()[0] == (
            "Where is the café?",)
        assert con.execute("SELECT count(*) FROM scores WHERE status = 'ok'").fetchall() == [(2,)]
    finally:
        con.close()

    labels_db = tmp_path / "labels.duckdb"
    run_id = tiny_run(labels_db, tmp_path)
    close_store(labels_db)
    ratings = tmp_path / "ratings.csv"
    ratings.write_bytes((HEADER + "\n".join(GOOD_ROWS) + "\nq2,local,ann,3,déjà vu,correct\n").encode("cp1252"))
    out = cli("labels", "import", str(ratings), "--run", run_id, db=labels_db)
    assert out.returncode == 2 and "--encoding cp1252" in out.stderr, out.stderr
    advised = re.search(r"command line: (--encoding \S+?);", out.stderr).group(1).split()
    out = cli("labels", "import", str(ratings), "--run", run_id, *advised, db=labels_db)
    assert out.returncode == 0 and out.stdout.startswith("imported 8 ratings"), out.stderr


def test_labels_import_says_which_ratings_it_skipped_and_why(tmp_path):
    from evaluators.store import close_store
    from tests.helpers.tiny_run import GOOD_ROWS, HEADER, tiny_run

    db = tmp_path / "labels.duckdb"
    run_id = tiny_run(db, tmp_path)
    close_store(db)
    ratings = tmp_path / "ratings.csv"
    ratings.write_text(HEADER + "\n".join(GOOD_ROWS) + "\nq3,local,ann,nan,,\nq4,basic,ann,,,NaN\n")
    out = cli("labels", "import", str(ratings), "--run", run_id, db=db)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == (f"imported 6 ratings of 2 dimensions (correctness, faithfulness) by 2 annotators "
                                  f"from ratings.csv into run {run_id}; skipped 4 ratings with no value: "
                                  "2 NaN (rows 4, 5), 2 blank (rows 4, 5)")


def test_resuming_a_run_of_a_database_that_does_not_exist_creates_no_file(tmp_path):
    db = tmp_path / "typo.duckdb"
    for flag in ("--resume", "--retry-failed"):
        out = cli("run", flag, "run-x", db=db)
        assert out.returncode == 2 and f"no database at {db}" in out.stderr and "run-x" in out.stderr, out.stderr
    assert not db.exists()


def test_progress_lines_where_stderr_is_not_a_terminal(tmp_path):
    """A line every few seconds, never one per report (a log would fill up), and the last one; each names the
    metric, the cells, the time elapsed and, once a batch is timed, the time left."""
    import io

    from evaluators.cli import MetricLines

    quiet = MetricLines(file=io.StringIO(), every=60)
    for done in range(1000):
        quiet("rouge_l", done, 1000, done, 1000)
    quiet("rouge_l", 1000, 1000, 1000, 1000)
    first, last = quiet.file.getvalue().splitlines()  # the first report and the end: nothing between
    assert "rouge_l 0/1,000 · 0 of 1,000 cells (0%) · <1 s elapsed" in first
    assert last.endswith("every metric scored · 1,000 of 1,000 cells (100%) · <1 s elapsed")

    every = MetricLines(file=io.StringIO(), every=0)
    for report in [(0, 0), (0, 0), (10, 10), (10, 10), (20, 20)]:  # opening, a batch started, scored, ...
        every("faithfulness", *report[:1], 40, report[1], 40)
    lines = every.file.getvalue().splitlines()
    assert len(lines) == 5 and "faithfulness 20/40 · 20 of 40 cells (50%)" in lines[-1]
    assert "left" not in lines[1] and " left" in lines[-1]  # a time left once a batch is timed


def test_a_file_stored_before_the_usage_columns_gains_its_usage_when_run_again_and_says_so(tmp_path):
    db = tmp_path / "old.duckdb"
    golden = tmp_path / "gold.jsonl"
    golden.write_text('{"question_id": "a", "question": "Q?", "reference": "R"}\n', encoding="utf-8")
    outputs = tmp_path / "out.jsonl"
    outputs.write_text('{"question_id": "a", "answer": "R", "contexts": ["c"], "latency_ms": 640, "input_tokens": 90, '
                       '"output_tokens": 4}\n', encoding="utf-8")
    args = ("run", "--golden", str(golden), "--outputs", str(outputs), "--metrics", "exact_match")
    assert cli(*args, db=db).returncode == 0
    con = duckdb.connect(str(db))
    con.execute("UPDATE rag_outputs SET latency_ms = NULL, input_tokens = NULL, output_tokens = NULL")  # pre-17
    con.close()
    again = cli(*args, db=db)
    assert again.returncode == 0, again.stderr
    assert "out.jsonl: stored before; latency, tokens and cost filled in for 1 answer" in again.stderr
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert con.execute("SELECT latency_ms, input_tokens, output_tokens FROM rag_outputs").fetchall() == [
            (640.0, 90, 4)]
        assert con.execute("SELECT count(*) FROM datasets").fetchall() == [(2,)]
    finally:
        con.close()
