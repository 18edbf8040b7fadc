"""`python -m evaluators`: run, resume, export, list metrics and print any screen's tables without the app."""
from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import math
import os
import re
import sys
import time
import types
import typing
from pathlib import Path

import pandas as pd

from evaluators import api, queries
from evaluators.runs import calibrate, engine, lifecycle, runner, sampling
from evaluators.presentation import csv_export
from evaluators.judges import JUDGES, Judge, OfflineJudge, named, prices
from evaluators.judges import azure_judge
from evaluators.judges import check as judge_check
from evaluators.runs.estimate import Estimate
from evaluators.presentation.gate import (ALPHA, gate, junit_xml, markdown_report, parse_deltas, parse_tolerances,
                                         text_report)
from evaluators.records.judgments import JudgeRefused
from evaluators.metrics import REGISTRY, plugins
from evaluators.metrics.criteria import NEEDS_LLM
from evaluators.metrics.criteria import metric_of as criteria_metric
from evaluators.metrics.registry import INPUTS, SCALES
from evaluators.queries import versions
from evaluators.queries.calibrations import latest_calibration
from evaluators.queries.evaluate import seconds_text
from evaluators.queries.headline import HEADLINE
from evaluators.queries.screens import SCREENS
from evaluators.records import LoadError
from evaluators.records.run_status import RunStatus
from evaluators.store import Store, StoreLocked, StoreUnavailable, open_store

DEFAULT_DB = "data/ragscope.duckdb"
EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_DB, EXIT_BUDGET, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130

EPILOG = f"""\
database: --db, else $RAGSCOPE_DB, else {DEFAULT_DB}.
exit codes: 0 success; 1 the run failed (e.g. the judge server refused the key or the model: resume once
fixed), no cell could be scored, or `gate` found a regression; 2 bad input or usage (every problem is
listed with file, row and field; nothing is written; also a run whose estimated cost is above --max-cost);
3 the database cannot be used: another process (e.g.
the running app) held it for longer than $RAGSCOPE_DB_WAIT seconds (default 60: the app lets go of it
between page runs and batches), or it cannot be opened or written (a directory, not a DuckDB file, a read-only
place, a full disk: the message says what to do); 4 the run stopped at its --max-cost budget (its cells not
judged yet are pending: `run --resume RUN_ID --max-cost HIGHER`); 130 interrupted (resume with `run --resume RUN_ID`).

examples:
  python -m evaluators run --golden data/demo/novel_44557_golden.csv \\
      --outputs data/demo/novel_44557_outputs.jsonl
  python -m evaluators run --golden ragchecker.json          # golden and answers in one file
  python -m evaluators run --golden gold.csv --outputs local_search=local.jsonl --outputs basic_search=basic.csv
  python -m evaluators run --golden gold.csv --outputs out.jsonl --criteria criteria.yaml   # your own criteria
  python -m evaluators export RUN_ID --out scores.parquet
  python -m evaluators view compare RUN_ID --scale percent --json   # a screen's tables, as the app shows them
  python -m evaluators view history RUN_ID                          # headline metrics over the golden set's runs
  python -m evaluators gate NEW_RUN_ID --baseline RELEASED_RUN_ID --junit gate.xml   # exit 1 on a regression
  python -m evaluators report RUN_ID --out report.html             # one HTML file to send, opens offline
  python -m evaluators judge check --model gpt-5-mini              # what the judge server supports (1: cannot run)
  python -m evaluators judge calibrate --model gpt-5-mini --max-cost 1   # how far the judge agrees with people
  python -m evaluators metrics
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ragscope" if Path(sys.argv[0]).name == "ragscope" else "python -m evaluators",  # pyproject's command
        description="RAGScope metric engine: score RAG answers against a golden set.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def with_db(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
        p.add_argument("--db", default=os.environ.get("RAGSCOPE_DB", DEFAULT_DB),
                       help=f"DuckDB file (default: $RAGSCOPE_DB or {DEFAULT_DB})")
        return p

    run = with_db(sub.add_parser(
        "run", help="evaluate RAG outputs against a golden set",
        description="Evaluate every (question, method) pair and store the scores. Files may be CSV, JSON, "
                    "JSONL or Parquet, in RAGScope's, ragas', DeepEval's, RAGChecker's, GraphRAG-Bench's or haystack's "
                    "column names, or InspectorRAGet's experiment JSON (golden set and every model's answers).",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter))
    run.add_argument("--golden", help="golden set: question_id, question, reference (+ question_type, checks, ...)")
    run.add_argument("--outputs", action="append", default=[], metavar="[METHOD=]PATH",
                     help="RAG outputs: question_id, answer, contexts (+ method). Repeat for several files. "
                          "METHOD= names the method of a file without a method column (default: the file name). "
                          "Omit when the golden file holds the answers too.")
    run.add_argument("--method-attribute", metavar="NAME",
                     help="a trace file's method: this resource or span attribute's value (default: service.name)")
    run.add_argument("--question-id-attribute", metavar="NAME",
                     help="join a trace file's traces to the golden set by this attribute's value, the golden "
                          "question's id (default: by the question's text)")
    run.add_argument("--context-sep", help="split a contexts cell that is one string on this separator, e.g. '|||'")
    run.add_argument("--encoding", default="utf-8",
                     help="text encoding of the input files, all of them (default: utf-8; e.g. cp1252 for a CSV "
                          "Excel saved on Windows)")
    run.add_argument("--judge", default="offline", choices=JUDGES,
                     help="who judges the LLM metrics (default: offline, no key and no network): openai, any "
                          "OpenAI-compatible server; azure, an Azure OpenAI deployment")
    run.add_argument("--model", help="judge model name (openai judge); the deployment's name (azure judge)")
    run.add_argument("--base-url", help="OpenAI-compatible base URL (openai judge; default $OPENAI_BASE_URL); "
                                        "the key comes from OPENAI_API_KEY and is never stored")
    _azure_arguments(run)
    run.add_argument("--metrics", help="comma-separated metric ids (default: all; see `metrics`); a rank metric at "
                                       "a cut-off is id@k, e.g. id_recall@5")
    run.add_argument("--k", type=_cutoffs, metavar="K,K,...",
                     help="the rank metrics' cut-offs, e.g. 1,3,5,10 (id_recall@5, ...; default: those of 1,3,5,10 "
                          "shorter than the longest retrieved list, where the golden set names relevant documents)")
    run.add_argument("--qrels", metavar="FILE",
                     help="the documents that answer each question: BEIR's qrels TSV (header query-id, corpus-id, "
                          "score) or TREC's (qid 0 docid rel); its query ids are the golden set's question ids, its "
                          "corpus ids the retrieved chunks' ids. Replaces the golden set's relevant_ids")
    run.add_argument("--criteria", metavar="FILE", action="append", default=[],
                     help="your own criteria, each a metric of the run: a JSON, TOML or YAML file ({\"criteria\": "
                          "[{\"id\": ..., \"criterion\": ..., \"scale\": \"1-5\"|\"pass/fail\"|\"0-1\", "
                          "\"inputs\": [...]}]}, README \"Your own criteria\"); repeat for several files. An LLM "
                          "judge scores them; the offline judge marks them not applicable")
    run.add_argument("--name", help="a name for the run")
    run.add_argument("--concurrency", type=int, default=8, help="judge calls in flight at once (default: 8)")
    run.add_argument("--repeats", type=int, default=1, metavar="N",
                     help="openai/azure judge: ask for the holistic 1-5 ratings N times per sample; scores use the "
                          "mean (labels the majority) and every reply is kept to show the spread (default: 1)")
    run.add_argument("--timeout", type=float, metavar="SECONDS",
                     help="openai/azure judge: the deadline for each judge reply as a whole (connect, wait and the "
                          "full body), then the usual retries (default: 60)")
    run.add_argument("--max-output-tokens", type=int, metavar="N",
                     help="openai/azure judge: the most a reply cut off by the server's output limit is asked again "
                          "with (default: 32768); a small local server's own cap saves the time of asking for more")
    run.add_argument("--reasoning-effort", metavar="EFFORT",
                     help="openai/azure judge: minimal, low, medium or high, for a reasoning model (gpt-5 family, "
                          "o1/o3/o4); default: the server's own. Reasoning models are sent no temperature (they take "
                          "only the default) and max_completion_tokens; other servers learn from an HTTP 400 what they "
                          "refuse")
    run.add_argument("--price-in", type=float, metavar="USD",
                     help="the judge model's price per 1M input tokens (openai/azure judge; default: its list "
                          f"price, known for {', '.join(prices.LIST_PRICES)}; none for an azure deployment, whose "
                          "name is yours); recorded with the run")
    run.add_argument("--price-out", type=float, metavar="USD",
                     help="the judge model's price per 1M output tokens (openai/azure judge; default: its list price)")
    run.add_argument("--price-cached-in", type=float, metavar="USD",
                     help="the judge model's price per 1M input tokens served from the server's prompt cache "
                          "(openai/azure judge; default: its list price, else the input price)")
    run.add_argument("--batch", action="store_true",
                     help="openai judge: send the judge's requests through the OpenAI Batch API, at half the price, "
                          "with results within 24 h (in rounds: extraction and holistic, then verification); a "
                          "stopped run picks its batches up with `run --resume RUN_ID` (not the azure judge: Azure "
                          "batches need a Global Batch deployment)")
    run.add_argument("--max-cost", type=float, metavar="USD",
                     help="openai/azure judge: a budget. A run estimated above it does not start (exit 2); one whose "
                          "recorded judge cost reaches it stops, its cells not judged yet pending (exit 4). Recorded "
                          "with the run; with --resume RUN_ID it sets a new budget (e.g. a higher one, to finish)")
    run.add_argument("--estimate", action="store_true",
                     help="print the judge calls, tokens and cost the run would take, and stop (nothing is stored)")
    run.add_argument("--sample", type=int, metavar="N",
                     help="judge a random sample of N questions, stratified by question type, every method on the "
                          "same ones; with --resume RUN_ID, grow that run's sample to N (its cells are kept, only the "
                          "new questions are scored)")
    run.add_argument("--seed", type=int, metavar="S",
                     help="the seed of --sample's draw (default: a random one, printed and stored with the run: "
                          "the same seed draws the same sample)")
    run.add_argument("--plugin", action="append", default=[], metavar="FILE.py",
                     help="a Python file declaring metrics of your own (@plugin_metric; README \"Python metrics "
                          "(plug-ins)\"), repeatable: each metric it declares is computed too (or those --metrics "
                          "names) and stored with the run; a bad file: exit 2, nothing written")
    again = run.add_mutually_exclusive_group()
    again.add_argument("--resume", metavar="RUN_ID", help="continue an interrupted run; finished cells are kept")
    again.add_argument("--retry-failed", metavar="RUN_ID", help="re-score only the cells of a run that ended in an error")

    export = with_db(sub.add_parser("export", help="write a run's scores to CSV, Parquet or JSON"))
    export.add_argument("run_id")
    export.add_argument("--out", help="output file (default: RUN_ID.FORMAT)")
    export.add_argument("--format", choices=["csv", "parquet", "json"],
                        help="default: from --out's extension, else csv")
    export.add_argument("--wide", action="store_true", help="one row per (question, method), one column per metric")

    metrics = sub.add_parser("metrics", help="list the metric catalogue with scale and source seed")
    metrics.add_argument("--json", action="store_true", help="machine-readable output")
    metrics.add_argument("--criteria", metavar="FILE", action="append", default=[],
                         help="list the criteria of this file (JSON, TOML or YAML) too, after the catalogue; repeat "
                              "for several files")
    metrics.add_argument("--plugin", action="append", default=[], metavar="FILE.py",
                         help="list the metrics this plug-in file declares too (installed packages' are listed always)")

    demo = with_db(sub.add_parser("demo", help="evaluate the demo runs with the offline judge (each timed)",
                                  description="Evaluate the demo runs (data/demo/README.md) with the offline judge, "
                                              "one after another, printing each run's time: aragog (ARAGOG "
                                              "retrieval settings, the run the app opens on), clapnq (three LLMs vs "
                                              "three annotators), graphrag (GraphRAG-Bench, simulated outputs), hyde "
                                              "(ARAGOG baseline RAG vs HyDE, judged without chunks). "
                                              "Finished runs are kept: running it again computes nothing."))
    demo.add_argument("demos", nargs="*", metavar="DEMO", help="only these demos: aragog, clapnq, graphrag, hyde "
                      "(default: all)")

    with_db(sub.add_parser("runs", help="list the runs in the database"))

    labels = sub.add_parser("labels", help="import human ratings or labels of a run's answers")
    labels_import = with_db(labels.add_subparsers(dest="labels_command", required=True, metavar="ACTION").add_parser(
        "import", help="store a file of human ratings in the run's annotations",
        description="Import human ratings (numbers) or labels (texts) from a CSV, JSON, JSONL or Parquet file with "
                    "columns question_id, method, annotator and one column per rated dimension (+ optional "
                    "<dimension>_reason, or one reason column for a single dimension), or InspectorRAGet's "
                    "experiment JSON as it is. Every problem is listed and nothing is stored while there is one; "
                    "the same file imported into the same run again stores nothing."))
    labels_import.add_argument("file", help="the labels file")
    labels_import.add_argument("--run", required=True, metavar="RUN_ID", help="the run whose answers were rated")
    labels_import.add_argument("--encoding", default="utf-8", help="text encoding of a CSV/JSON file (default: utf-8)")

    gate_parser = with_db(sub.add_parser(
        "gate", help="exit 1 when a run is significantly worse than a baseline run (CI regression gate)",
        description="Compare CANDIDATE with BASELINE question by question, one paired comparison per metric\n"
                    "(and method). A regression: a metric whose family-wise p (Westfall-Young max-T over all the\n"
                    "gated metrics: sign flips of whole questions, so near-duplicate metrics are not counted as\n"
                    "independent tests) is below --alpha and whose whole 95% CI of the difference is worse than\n"
                    "its tolerance. With --margin a metric must instead show non-inferiority. Each metric's\n"
                    "minimum detectable effect (MDE: 80% power at --alpha) is printed; the verdict says when the\n"
                    "golden set cannot detect drops of a useful size. Metrics with no direction are reported and\n"
                    "never fail. A side is RUN_ID[:METHOD]; without METHOD: the run's only method, or every\n"
                    "method both runs have.",
        epilog="exit codes: 0 no regression; 1 one or more regressions or metrics not shown non-inferior (each "
               "named with its difference, CI, family-wise p and MDE), or a --require-mde not met; 2 bad arguments "
               "or inputs; 3 the database is busy or cannot be used.\n\n"
               "example:\n  python -m evaluators gate run-20261127-124501-1a2b3c4d --baseline "
               "run-20261101-090000-9f8e7d6c:local_search \\\n      --tolerance judge_overall=0.1 "
               "--junit gate.xml --markdown gate.md",
        formatter_class=argparse.RawDescriptionHelpFormatter))
    gate_parser.add_argument("candidate", metavar="CANDIDATE", help="the run to check: RUN_ID[:METHOD]")
    gate_parser.add_argument("--baseline", required=True, metavar="BASELINE",
                      help="the run it must not be worse than, e.g. the last released one: RUN_ID[:METHOD]")
    gate_parser.add_argument("--metrics", type=_comma_list, metavar="ID,ID",
                      help="comma-separated metric ids (default: the headline metrics both runs scored: "
                           f"{', '.join(HEADLINE)})")
    gate_parser.add_argument("--tolerance", action="append", default=[], metavar="METRIC=DELTA",
                      help="a worsening a metric may show without failing, in its own scale (e.g. judge_overall=0.1 "
                           "on 1-5, faithfulness=0.02); repeat for several metrics (default: 0)")
    gate_parser.add_argument("--margin", action="append", default=[], metavar="METRIC=DELTA",
                      help="non-inferiority for a metric: fail unless the 95%% CI of candidate - baseline, in the "
                           "metric's better direction, lies above -DELTA (own scale); repeat for several metrics")
    gate_parser.add_argument("--require-mde", action="append", default=[], metavar="METRIC=X",
                      help="fail when this golden set cannot detect a change of X in the metric (its minimum "
                           "detectable effect at 80%% power is above X); repeat for several metrics")
    gate_parser.add_argument("--alpha", type=float, default=ALPHA, help=f"significance level (default: {ALPHA})")
    gate_parser.add_argument("--markdown", metavar="FILE", help="write a short report fit for a pull-request comment")
    gate_parser.add_argument("--junit", metavar="FILE", help="write JUnit XML, one testcase per metric, for CI systems")

    report = with_db(sub.add_parser(
        "report", help="write a run's report: one self-contained HTML file to send (opens offline, prints on A4)",
        description="Write one HTML file for people who will not open the app: what was evaluated, Overview's\n"
                    "headline, the comparison by question type, pass / partial / fail and CORRECT / WRONG / DON'T\n"
                    "KNOW per method, the questions where the methods differ most (answers with their claims\n"
                    "highlighted, the chunks they cite) and how the scores are computed. Charts and plotly.js are\n"
                    "inside the file: it opens offline and requests nothing.",
        epilog="exit codes: 0 written; 2 an unknown run, method or baseline, or a file that cannot be written;\n"
               "3 the database is busy or cannot be used.\n\nexample:\n  python -m evaluators report RUN_ID --methods "
               "local_search,OLD_RUN_ID:local_search --baseline OLD_RUN_ID:local_search --out report.html",
        formatter_class=argparse.RawDescriptionHelpFormatter))
    report.add_argument("run_id", metavar="RUN_ID", help="the run (see `python -m evaluators runs`)")
    report.add_argument("--methods", type=_comma_list, metavar="M1,M2",
                        help="the methods compared, comma-separated; RUN_ID:METHOD names a method of another run on "
                             "the same questions (default: every method of the run)")
    report.add_argument("--baseline", metavar="METHOD",
                        help="the method the others are compared with, or RUN_ID:METHOD (default: the method rated "
                             "best overall, else the last of --methods)")
    report.add_argument("--out", required=True, metavar="FILE.html", help="the file to write")

    judge = sub.add_parser("judge", help="check a judge's server before a run, or measure how far it agrees with "
                                         "people (calibrate)")
    actions = judge.add_subparsers(dest="judge_command", required=True, metavar="ACTION")
    check = actions.add_parser(
        "check", help="send a handful of tiny requests and report what the judge's server supports",
        description="Send a handful of tiny requests to the judge's server and report what it supports: the strict\n"
                    "JSON schema (structured outputs), JSON mode, several choices (n), a seed, the output limit's\n"
                    "name (max_tokens or max_completion_tokens), temperature 0, reasoning and cached tokens in the\n"
                    "usage, replies as JSON or prose-wrapped JSON; the median latency and whether a list price is\n"
                    "known. Nothing is stored; the key comes from OPENAI_API_KEY (azure: AZURE_OPENAI_API_KEY) and is\n"
                    "never printed.",
        epilog="exit codes: 0 the judge can run (a reply held usable JSON, with whatever parameters had to be\n"
               "dropped); 1 it cannot (the key or the model refused, the server unreachable or silent, no JSON in any\n"
               "reply: the reason is printed); 2 bad arguments (e.g. a reasoning effort other than minimal, low,\n"
               "medium or high, no --model, no key, or the offline judge, which makes no calls).\n\n"
               "example:\n  OPENAI_API_KEY=... python -m evaluators judge check --judge openai --model gpt-5-mini "
               "--reasoning-effort low\n  python -m evaluators judge check --model qwen2.5-7b-instruct --base-url "
               "http://127.0.0.1:8080/v1 --json\n"
               "  python -m evaluators judge check --judge azure --model my-deployment \\\n"
               "      --azure-endpoint https://RESOURCE.openai.azure.com --api-version 2024-10-21",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    check.add_argument("--judge", default="openai", choices=JUDGES, help="the judge to check (default: openai)")
    check.add_argument("--model", help="the judge model's name")
    check.add_argument("--base-url", help="OpenAI-compatible base URL (default $OPENAI_BASE_URL, else the OpenAI API)")
    _azure_arguments(check)
    check.add_argument("--reasoning-effort", metavar="EFFORT",
                       help="minimal, low, medium or high: sent as a run would send it, and checked")
    check.add_argument("--timeout", type=float, metavar="SECONDS",
                       help=f"the deadline of each reply as a whole (default: {judge_check.DEFAULT_TIMEOUT:g}): a "
                            "server that never answers is told within it")
    check.add_argument("--json", action="store_true", help="the report as one JSON object")
    _add_calibrate(with_db(actions.add_parser(
        "calibrate", help="measure how far a judge agrees with people on the labelled items RAGScope ships",
        description="Score a stratified sample of the human-labelled items in data/calibration (test parts of\n"
                    "permissively licensed sets, never used to fit anything) with the judge and with the offline\n"
                    "judge, in a temporary database, and print their agreement with people per label (correctness,\n"
                    "faithfulness, relevance) and part (short and long references apart): AUROC for a yes/no label,\n"
                    "Spearman for a graded one, with 95%% bootstrap CIs, beside the offline judge's and token F1's on\n"
                    "the same items. The estimate is printed first. The result is stored with the judge and model\n"
                    "(--db): Evaluate, Overview and the report show it. The key comes from OPENAI_API_KEY and is\n"
                    "never printed or stored.",
        epilog="exit codes: 0 done (also when --max-cost stopped it: what was judged is stored, the headline says it\n"
               "stopped); 1 the judge could not run (the key or the model refused, no cell judged); 2 bad arguments\n"
               "(no --model or key, a sample below 1, an estimate above --max-cost, ...).\n\n"
               "example:\n  OPENAI_API_KEY=... python -m evaluators judge calibrate --model gpt-5-mini --sample 200 "
               "--max-cost 1\n  python -m evaluators judge calibrate --judge offline --sample 100",
        formatter_class=argparse.RawDescriptionHelpFormatter)))

    view = sub.add_parser(
        "view", help="print a screen's tables as the app shows them (text, --json or --csv)",
        description="Print the tables a screen of the app shows, with the same numbers and columns, for the same "
                    "choices: each screen's options are its view's (python -m evaluators view SCREEN --help).")
    screens = view.add_subparsers(dest="screen", required=True, metavar="SCREEN")
    for name, screen in SCREENS.items():
        _add_screen(with_db(screens.add_parser(name, help=_doc(screen).split("\n\n")[0].split(":")[0],
                                               description=_doc(screen).split("\n\n")[0])), screen)
    return parser


def _add_calibrate(p: argparse.ArgumentParser) -> None:
    p.add_argument("--judge", default="openai", choices=JUDGES, help="the judge to measure (default: openai)")
    p.add_argument("--model", help="the judge model's name (openai judge)")
    p.add_argument("--base-url", help="OpenAI-compatible base URL (default $OPENAI_BASE_URL, else the OpenAI API)")
    p.add_argument("--reasoning-effort", metavar="EFFORT", help="minimal, low, medium or high (a reasoning model)")
    p.add_argument("--sample", type=int, default=calibrate.DEFAULT_SAMPLE, metavar="N",
                   help=f"labelled items to judge, stratified by set and label (default: {calibrate.DEFAULT_SAMPLE})")
    p.add_argument("--seed", type=int, default=calibrate.DEFAULT_SEED, metavar="S",
                   help=f"the seed of the sample's draw (default: {calibrate.DEFAULT_SEED}: the same N, the same items)")
    p.add_argument("--max-cost", type=float, metavar="USD",
                   help="a budget: estimated above it, nothing is sent (exit 2); reached, the judge stops")
    p.add_argument("--price-in", type=float, metavar="USD", help="price per 1M input tokens (default: the list price)")
    p.add_argument("--price-out", type=float, metavar="USD", help="price per 1M output tokens (default: the list price)")
    p.add_argument("--concurrency", type=int, default=8, help="judge calls in flight at once (default: 8)")
    p.add_argument("--estimate", action="store_true", help="print the estimate and stop (nothing is sent or stored)")
    p.add_argument("--json", action="store_true", help="the result as one JSON object")
    _azure_arguments(p)


def _azure_arguments(parser: argparse.ArgumentParser) -> None:
    """Where the azure judge's deployment is (the openai SDK's names); its key comes from AZURE_OPENAI_API_KEY."""
    parser.add_argument("--azure-endpoint", metavar="URL",
                        help="azure judge: the resource's endpoint, https://RESOURCE.openai.azure.com (default "
                             f"${azure_judge.ENDPOINT_ENV}); --model names the deployment, the key comes from "
                             f"{azure_judge.KEY_ENV} and is never stored")
    parser.add_argument("--api-version", metavar="VERSION",
                        help=f"azure judge: the Azure OpenAI API version, e.g. 2024-10-21 (default "
                             f"${azure_judge.VERSION_ENV})")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # installed packages' metrics (the ragscope.metrics entry points): one that fails is said, not fatal (a run
    # that names its metrics is refused as naming unknown ones)
    args.entry_metrics, failures = plugins.load_entry_points()
    for failure in failures:
        print(f"warning: plug-in not loaded: {failure}", file=sys.stderr)
    try:
        return COMMANDS[args.command](args)
    except LoadError as exc:
        return _fail(str(exc), EXIT_BAD_INPUT)
    except (StoreLocked, StoreUnavailable) as exc:
        return _fail(str(exc), EXIT_DB)
    except (KeyError, ValueError) as exc:
        return _fail(exc.args[0] if exc.args else str(exc), EXIT_BAD_INPUT)
    except KeyboardInterrupt:
        return _fail("interrupted; finished cells are stored: resume with `run --resume RUN_ID` (see `runs`)",
                     EXIT_INTERRUPTED)


def _fail(message: str, code: int) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code


def _open_store(db: str) -> Store:
    """The store of `db`. The app holds the file while a page runs and while a batch is written; then the CLI
    waits and tries again (evaluators.store), saying so once (a long run may wait before each batch)."""
    said = []

    def busy() -> None:
        if not said:
            said.append(True)
            print("the database is busy (another process, e.g. the app, is using it), retrying...", file=sys.stderr)

    return open_store(db, on_busy=busy)


# -- run ------------------------------------------------------------------------------------------

def _split_outputs_arg(arg: str) -> tuple[str | None, str]:
    """'local_search=out.jsonl' -> ('local_search', 'out.jsonl'); a bare path has no method."""
    method, sep, path = arg.partition("=")
    if sep and method and not Path(arg).exists() and "/" not in method:
        return method, path
    return None, arg


def _judge(args) -> Judge:
    """The judge the options describe (a new run's: --resume and --retry-failed take the run's own)."""
    if not named(args.judge).makes_calls:
        if _prices_given(args) or args.batch:
            raise ValueError("--price-in/--price-out/--price-cached-in/--batch apply to an LLM judge (the offline "
                             "judge costs nothing)")
        if args.reasoning_effort is not None:
            raise ValueError("--reasoning-effort applies to an LLM judge (--judge openai or azure)")
        return OfflineJudge()
    return _llm_judge(args, concurrency=args.concurrency, repeats=args.repeats, timeout=args.timeout,
                      max_output_tokens=args.max_output_tokens, reasoning_effort=args.reasoning_effort,
                      price_in=args.price_in, price_out=args.price_out, price_cached_in=args.price_cached_in,
                      batch=args.batch)


def _llm_judge(args, **settings) -> Judge:
    """The --judge kind with `settings`, its model and its server: --base-url (else $OPENAI_BASE_URL), or for a kind
    whose server is an endpoint (azure) --azure-endpoint and --api-version (else the judge reads its environment)."""
    kind = named(args.judge)
    azure = {k: v for k, v in (("endpoint", args.azure_endpoint), ("api_version", args.api_version)) if v is not None}
    if "endpoint" in {f.name for f in dataclasses.fields(kind)}:
        return kind(model=args.model, base_url=args.base_url, **azure, **settings)  # a --base-url is its problem
    if azure:
        raise ValueError(f"--azure-endpoint and --api-version apply to --judge azure, not --judge {kind.name}")
    return kind(model=args.model, base_url=args.base_url or os.environ.get("OPENAI_BASE_URL"), **settings)


def _prices_given(args) -> bool:
    return any(p is not None for p in (args.price_in, args.price_out, args.price_cached_in))


def cmd_run(args) -> int:
    run_id, samples = args.resume or args.retry_failed, None
    if run_id is not None:
        if _prices_given(args) or args.batch:
            return _fail("--price-in/--price-out/--price-cached-in/--batch apply to a new run (a run keeps the "
                         "prices and the Batch API mode it was started with)", EXIT_BAD_INPUT)
        if args.reasoning_effort is not None:
            return _fail("--reasoning-effort applies to a new run (a run keeps the reasoning effort it was started "
                         "with)", EXIT_BAD_INPUT)
        if args.criteria:
            return _fail("--criteria applies to a new run (a run keeps the criteria it was started with)",
                         EXIT_BAD_INPUT)
        if args.plugin:
            return _fail("--plugin applies to a new run (a resumed run loads its own plug-ins again, from the files "
                         "it stored, when they are unchanged)", EXIT_BAD_INPUT)
        if not Path(args.db).exists():  # a run to continue is in a database: never create an empty one for it
            return _fail(f"no database at {args.db} (--db or $RAGSCOPE_DB) to find run {run_id} in", EXIT_BAD_INPUT)
        store = _open_store(args.db)
        if args.seed is not None or (args.sample is not None and not args.resume):
            return _fail("--seed applies to a new run, --sample to a new run or --resume (a run keeps its seed)",
                         EXIT_BAD_INPUT)
        if store.run(run_id) is None:
            return _fail(f"no run {run_id!r} in {store.path} (see `python -m evaluators runs`)", EXIT_BAD_INPUT)
        with store.lease():
            for line in lifecycle.reload_plugins(store, run_id):  # PluginError: changed since the run (exit 2)
                print(line, file=sys.stderr)
        sample = lifecycle.resume(store, run_id, max_cost=args.max_cost, sample=args.sample)
        if args.sample is not None:
            print(f"run {run_id}: {sampling.note(sample)}", file=sys.stderr)
    else:
        if not args.golden:
            return _fail("--golden is required (or --resume / --retry-failed RUN_ID)", EXIT_BAD_INPUT)
        own = [m for path in args.plugin for m in plugins.load(path)]  # before anything is read or stored
        judge = _judge(args)
        criteria = api.criteria_of(args.criteria)  # a bad file: LoadError, exit 2, before any other file is read
        spec = lifecycle.RunSpec(judge, metrics=_comma_list(args.metrics) if args.metrics is not None else None,
                                 name=args.name, context_sep=args.context_sep, max_cost=args.max_cost,
                                 sample=args.sample, seed=args.seed, k=args.k, criteria=criteria,
                                 plugins=tuple(args.entry_metrics) + tuple(own))
        # the numbers as given, whichever judge (the offline one ignores them, but a --concurrency 0 is a mistake
        # all the same); the judge's model and key, unless only estimating
        given = lifecycle.number_problems(dict(concurrency=args.concurrency, repeats=args.repeats,
                                               timeout=args.timeout, max_output_tokens=args.max_output_tokens,
                                               reasoning_effort=args.reasoning_effort))
        needs = [] if args.estimate else lifecycle.judge_problems(judge)
        if problems := list(dict.fromkeys(needs + spec.problems() + given)):  # before any file is read
            return _refuse(problems, judge)
        outputs = [_split_outputs_arg(arg) for arg in args.outputs]
        inputs = api.read_inputs(args.golden, outputs or None, context_sep=args.context_sep, encoding=args.encoding,
                                 qrels=args.qrels, method_attribute=args.method_attribute,
                                 question_id_attribute=args.question_id_attribute)
        for dataset in inputs.outputs:  # what a trace file held but is not scored (unmatched traces, ...)
            for note in getattr(dataset, "notes", ()):
                print(f"  note: {dataset.source}: {note}", file=sys.stderr)
        prepared = lifecycle.prepare(inputs, spec)
        _print_plan(prepared, args)
        if prepared.problems:  # before anything is stored
            return _refuse(prepared.problems, judge)
        if args.estimate:
            return EXIT_OK
        store = _open_store(args.db)
        run_id = lifecycle.start(store, prepared, say=lambda message: print(f"  note: {message}", file=sys.stderr))
        print(f"run {run_id}", file=sys.stderr)
        samples = prepared.samples
    try:
        status = _execute_with_bar(store, run_id, samples)
    except JudgeRefused as exc:  # no call could succeed: the run stopped at once, its cells still to do
        return _fail(f"{exc}\nthe run stopped; its cells not scored yet are kept: once fixed, resume with: "
                     f"python -m evaluators run --db {store.path} --resume {run_id}", EXIT_FAILED)
    with store.lease():
        code = _report(store, run_id)
        if status == RunStatus.BUDGET_REACHED:
            return _fail(f"{store.run(run_id)['error']}; the cells not judged yet are pending: resume with a higher "
                         f"budget: python -m evaluators run --db {store.path} --resume {run_id} --max-cost USD",
                         EXIT_BUDGET)
        return code


# What the CLI asks for where a judge lacks something (lifecycle.judge_problems); the key: the judge's `key_env`
NEEDS = {"model": "--model", "endpoint": f"--azure-endpoint (or ${azure_judge.ENDPOINT_ENV})",
         "api_version": f"--api-version (or ${azure_judge.VERSION_ENV})"}


def _refuse(problems, judge: Judge) -> int:
    """Every problem, one `error:` line each (what the judge lacks in one line, by flag); exit 2."""
    asks = NEEDS | {"api_key": f"{judge.key_env} in the environment"}
    needs = [asks[p.about] for p in problems if p.about in asks]
    lines = ([f"--judge {judge.name} needs {' and '.join(needs)} (the key is never stored)"] if needs else []) + [
        p.message for p in problems if p.about not in asks]
    for line in lines:
        _fail(line, EXIT_BAD_INPUT)
    return EXIT_BAD_INPUT


def _print_plan(prepared: lifecycle.Prepared, args) -> None:
    """Print the sample drawn, what the run will do and what it will cost the judge."""
    judge, drawn = prepared.spec.judge, prepared.drawn
    if drawn is not None and drawn.everything:
        print(f"note: --sample {args.sample}: the outputs answer {drawn.of} question(s), so every one is judged",
              file=sys.stderr)
    elif drawn is not None:
        print(f"{sampling.note(prepared.sample)}, stratified by question type; the same --seed draws it again, and "
              f"`run --resume RUN_ID --sample N` grows it", file=sys.stderr)
    print(f"{len(prepared.samples)} samples x {len(prepared.metric_ids)} metrics", file=sys.stderr)
    if own := prepared.spec.criteria:
        print(f"{len(own)} criteria of yours ({', '.join(c.id for c in own)}): " + (
            "the judge scores them all in one call per sample" if judge.judges_criteria else
            f"not applicable, {NEEDS_LLM.format(judge=judge.name)}"), file=sys.stderr)
    for method, qids in prepared.missing.items():
        print(f"  note: {method} has no answer for {len(qids)} golden question(s), e.g. {qids[0]}", file=sys.stderr)
    if judge.makes_calls and prepared.samples:
        est = prepared.estimate
        print(est.summary(), file=sys.stderr)
        if est.total_calls:
            print(_estimated_cost(est, judge, args), file=sys.stderr)


def _estimated_cost(est: Estimate, judge: Judge, args) -> str:
    price = judge.billed_price
    if price is None:
        model = f"for model {judge.model!r}" if judge.model else "without --model"
        return f"cost: unknown, no list price {model}: give --price-in and --price-out (USD per 1M tokens)"
    given = args.price_in is not None and args.price_out is not None
    basis = "" if given else f" (list price of {judge.model} as of {prices.AS_OF})"
    if judge.batch:
        basis += f" (Batch API: {prices.BATCH_DISCOUNT:.0%} of it)"
    return f"cost, estimated: ~{prices.usd(est.cost(price))} at {price.describe()}{basis}{est.cache_note()}"


class MetricBar:
    """`engine.execute_run`'s progress as one tqdm bar over the run's cells, labelled with the metric
    being scored (the engine reports a metric as it starts on a batch and when it is done with it) and,
    for an LLM judge, the samples judged so far (`sample_judged`, the engine's on_sample)."""

    def __init__(self, file=None, **tqdm_options):
        self.file, self.options = file or sys.stderr, tqdm_options  # stderr as it is when the run starts
        self.bar = None
        self.judged = 0

    def __call__(self, metric_id: str, metric_done: int, metric_total: int, done: int, total: int) -> None:
        from tqdm import tqdm

        label = f"{metric_id} {metric_done:,}/{metric_total:,}" if done < total else "every metric scored"
        if self.bar is None:
            # initial: cells of an earlier session do not count into the rate (a resume's ETA holds);
            # smoothing 0: the rate is the mean since the start, as metrics differ a lot in pace
            self.bar = tqdm(total=total, initial=done, desc=label, unit="cell", file=self.file,
                            smoothing=0, dynamic_ncols=True, **self.options)
        self.bar.n = done
        self.bar.set_description_str(label)  # redraws: a slow metric must not show the one before

    def sample_judged(self) -> None:
        self.judged += 1
        if self.bar is not None:
            self.bar.set_postfix_str(f"{self.judged:,} samples judged")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class MetricLines:
    """The bar's progress where stderr is not a terminal (a log, CI, a pipe), which a redrawn bar would flood:
    a line every `every` seconds, and the last one, each with the time left at every metric's own pace (as the
    Evaluate screen tells it, runner.Job)."""

    def __init__(self, file=None, every: float = 10.0):
        self.file, self.every = file or sys.stderr, every
        self.job = runner.Job("")
        self.printed = -math.inf
        self.judged = 0

    def __call__(self, metric_id: str, metric_done: int, metric_total: int, done: int, total: int) -> None:
        self.job.on_metric(metric_id, metric_done, metric_total, done, total)
        if time.monotonic() - self.printed >= self.every or done >= total:
            self.printed = time.monotonic()
            snap = self.job.snapshot()
            left = snap.eta_seconds if done < total else None
            print(f"{time.strftime('%H:%M:%S')} "
                  + (f"{metric_id} {metric_done:,}/{metric_total:,} · " if done < total else "every metric scored · ")
                  + f"{done:,} of {total:,} cells ({100 * done / total if total else 100:.0f}%) · "
                  + f"{seconds_text(snap.elapsed)} elapsed"
                  + (f" · {self.judged:,} samples judged" if self.judged else "")
                  + (f" · about {seconds_text(left)} left" if left else ""),
                  file=self.file, flush=True)

    def sample_judged(self) -> None:
        self.judged += 1

    def close(self) -> None:
        pass


def _execute_with_bar(store, run_id: str, samples=None) -> str:
    bar = MetricBar() if sys.stderr.isatty() else MetricLines()
    try:  # the judge's batch size: an LLM judge's batches are small, so the bar moves and commits are frequent
        return engine.execute_run(store, run_id, on_metric=bar, on_sample=bar.sample_judged, samples=samples)
    finally:
        bar.close()


def _report(store, run_id: str) -> int:
    if note := sampling.run_note(store.run(run_id)):
        print(f"{note}: the means and their n are the sample's")
    print(queries.summary_table(store, run_id).to_string())
    summary = queries.method_summary(store, run_id)
    failed = int(summary["n_failed"].sum())
    scored = int(summary["n_scored"].sum() + summary["n_not_applicable"].sum())
    skipped = int(summary["n_skipped"].sum())
    print(f"\nrun {run_id} in {store.path}: {scored} cells scored or not applicable, "
          + (f"{skipped} skipped (over the judge's limits, each cell says why), " if skipped else "")
          + f"{failed} failed")
    spent = queries.run_cost(store, run_id)  # None for the offline judge: it costs nothing
    if spent is not None:
        print(f"judge calls {spent['calls']:,} (+{spent['cached']:,} cached, {spent['failed']:,} failed), tokens "
              f"{spent['input_tokens']:,} in{_prompt_cached(spent)}, {spent['output_tokens']:,} out"
              f"{_reasoning(spent)}; "
              + prices.spent_text(spent["usd"], spent["price"], spent["model"], spent["recorded"]))
    if failed:
        print(f"re-score the failed cells with: python -m evaluators run --db {store.path} --retry-failed {run_id}")
    return EXIT_OK if scored else EXIT_FAILED


def _reasoning(spent: dict) -> str:
    reasoning = spent["reasoning_tokens"]
    return f" ({reasoning:,} of them reasoning)" if reasoning else ""


def _prompt_cached(spent: dict) -> str:
    cached = spent["cached_input_tokens"]
    return f" ({cached:,} from the server's prompt cache)" if cached else ""


# -- export, metrics, demo, runs ----------------------------------------------------------------

def cmd_export(args) -> int:
    store = _open_store(args.db)
    if store.run(args.run_id) is None:
        return _fail(f"no run {args.run_id!r} in {args.db} (see `python -m evaluators runs`)", EXIT_BAD_INPUT)
    fmt = args.format or (Path(args.out).suffix.lstrip(".").lower() if args.out else "csv")
    if fmt not in ("csv", "parquet", "json"):
        return _fail(f"cannot tell the format from {args.out!r}: pass --format csv|parquet|json", EXIT_BAD_INPUT)
    versions.know(store, args.run_id)
    frame = queries.run_scores(store, args.run_id)
    if args.wide:
        frame = queries.wide(frame)
    if note := sampling.run_note(store.run(args.run_id)):  # a column: every format says it, pandas reads it back
        frame = frame.assign(sample=note)
    out = Path(args.out or f"{args.run_id}.{fmt}")
    if fmt == "csv":
        csv_export.to_csv(frame, out)
    elif fmt == "parquet":
        frame.to_parquet(out, index=False)
    else:
        frame.to_json(out, orient="records", indent=1, force_ascii=False)
    print(f"wrote {len(frame)} rows to {out}")
    return EXIT_OK


def cmd_metrics(args) -> int:
    own = [criteria_metric(c) for c in api.criteria_of(args.criteria)]  # a bad file: LoadError, exit 2
    rows = [{"id": m.id, "family": m.family, "scale": SCALES[m.scale].text,
             "higher_is_better": m.higher_is_better, "needs": ", ".join(m.needs) or "-",
             "uses": ", ".join(m.uses) or "-",
             "seed": m.seed or "-", "formula": m.formula}
            for m in [*REGISTRY.values(), *args.entry_metrics, *(m for path in args.plugin for m in plugins.load(path)),
                      *own]]
    if args.json:
        print(json.dumps(rows, indent=1))
        return EXIT_OK
    frame = pd.DataFrame(rows).drop(columns="formula")
    print(frame.to_string(index=False))
    print("\ninputs: " + "; ".join(f"{k} = {v}" for k, v in INPUTS.items()))
    print("needs: without it a cell is not applicable; uses: read when present")
    print("formulas: python -m evaluators metrics --json")
    return EXIT_OK


def cmd_demo(args) -> int:
    from evaluators.demo import DEMOS, build_demos

    chosen = [d for d in DEMOS if not args.demos or d.key in args.demos]
    unknown = sorted(set(args.demos) - {d.key for d in DEMOS})
    if unknown:
        return _fail(f"unknown demo {', '.join(unknown)}; the demos are {', '.join(d.key for d in DEMOS)}",
                     EXIT_BAD_INPUT)
    store = _open_store(args.db)
    for built in build_demos(store, chosen):  # each line as soon as its run is done: a first build takes minutes
        took = f"computed in {built.seconds:.0f} s" if built.computed else "already finished"
        print(f"{built.run_id}  {built.name}: {took}", flush=True)
    print(f"demo runs in {store.path}")
    return EXIT_OK


def cmd_runs(args) -> int:
    frame = queries.runs(_open_store(args.db), cells=True)
    print(frame.to_string(index=False) if not frame.empty else "no runs yet")
    return EXIT_OK


# -- view ---------------------------------------------------------------------------------------------

def _doc(screen) -> str:
    return inspect.getdoc(screen) or ""


def _add_screen(parser: argparse.ArgumentParser, screen) -> None:
    """RUN_ID (optional for a screen whose view needs no run), one flag per keyword-only option of the view
    (its help: the option's line in the view's docstring and the default), and the output format."""
    params = inspect.signature(screen, eval_str=True).parameters
    needs_run = params["run_id"].default is inspect.Parameter.empty
    parser.add_argument("run_id", metavar="RUN_ID", nargs=None if needs_run else "?",
                        help="the run (see `python -m evaluators runs`)" + ("" if needs_run else
                                                                             "; optional: this screen needs none"))
    for param in params.values():
        if param.kind is inspect.Parameter.KEYWORD_ONLY:
            _add_option(parser, param, _doc(screen))
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="one JSON object: table name -> list of rows")
    output.add_argument("--csv", action="store_true", help="each table as CSV after a `# NAME` line")


def _add_option(parser: argparse.ArgumentParser, param: inspect.Parameter, doc: str) -> None:
    """`--name` for the option; not given, it is left out and the view applies its own default."""
    line = re.search(rf"^{param.name}: (.+)$", doc, re.MULTILINE)
    default = param.default
    shown = ",".join(default) if isinstance(default, (list, tuple)) else default
    text = (line.group(1) if line else "") + ("" if default is None else f" (default: {shown})")
    flag = "--" + param.name.replace("_", "-")
    annotation = param.annotation  # e.g. str, list[str] | None
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    kind = next(a for a in (typing.get_args(annotation) if union else (annotation,)) if a is not type(None))
    if kind is bool:
        parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=argparse.SUPPRESS, help=text)
        return
    if typing.get_origin(kind) is list:
        kind, text = _comma_list, text + "; comma-separated"
    elif kind not in (int, float):
        kind = str
    parser.add_argument(flag, type=kind, default=argparse.SUPPRESS, metavar=param.name.upper(),
                        help=text.replace("%", "%%"))


def _comma_list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def _cutoffs(text: str) -> list:
    """--k's ranks as numbers; an item that is no whole number stays text, for RunSpec to name it."""
    return [int(item) if item.isdigit() else item for item in _comma_list(text)]


def cmd_view(args) -> int:
    screen = SCREENS[args.screen]
    options = {name: getattr(args, name) for name, param in inspect.signature(screen).parameters.items()
               if param.kind is inspect.Parameter.KEYWORD_ONLY and hasattr(args, name)}
    store = _open_store(args.db)
    with store.lease():  # the screen's queries: one unit of work
        if args.run_id is not None and store.run(args.run_id) is None:
            return _fail(f"no run {args.run_id!r} in {args.db} (see `python -m evaluators runs`)", EXIT_BAD_INPUT)
        versions.know(store, args.run_id)  # the users' metrics (criteria, plug-ins') of the runs read
        tables = screen(store, args.run_id, **options)
        if args.run_id is not None and (sample := json.loads(store.run(args.run_id)["config"] or "{}").get("sample")):
            # the screens' "sample of N of M questions" line: a sampled run's tables say so too
            tables = {"sample": pd.DataFrame([sample | {"note": sampling.note(sample)}])} | tables
    print(_json(tables) if args.json else _csv(tables) if args.csv else _text(tables))
    return EXIT_OK


def _flat(frame: pd.DataFrame) -> pd.DataFrame:
    """A table with named row labels (metric, method) gets them as its first column."""
    return frame.reset_index() if any(frame.index.names) else frame


def _text(tables: dict[str, pd.DataFrame]) -> str:
    return "\n\n".join(f"{name}\n" + (_flat(frame).to_string(index=False) if len(frame) else "(no rows)")
                        for name, frame in tables.items())


def _json(tables: dict[str, pd.DataFrame]) -> str:
    return json.dumps({name: json.loads(_flat(frame).to_json(orient="records", double_precision=15, force_ascii=False,
                                                             date_format="iso"))
                       for name, frame in tables.items()}, ensure_ascii=False, indent=1)


def _csv(tables: dict[str, pd.DataFrame]) -> str:
    return "\n".join(f"# {name}\n" + csv_export.to_csv(_flat(frame))
                     for name, frame in tables.items())


def cmd_labels(args) -> int:
    from evaluators.store.ratings import import_file

    store = _open_store(args.db)
    with store.lease():  # an import: one unit of work
        versions.know(store, args.run)  # a criterion's id is a metric column too
        result = import_file(store, args.run, args.file, encoding=args.encoding)
    print(result.summary())
    return EXIT_OK


# -- report -------------------------------------------------------------------------------------------

def cmd_report(args) -> int:
    from evaluators.presentation.report import report_html

    if not Path(args.db).exists():  # a read: never create an empty database
        return _fail(f"no database at {args.db} (--db or $RAGSCOPE_DB)", EXIT_BAD_INPUT)
    store = _open_store(args.db)
    versions.know(store, args.run_id)
    page = report_html(store, args.run_id, methods=args.methods, baseline=args.baseline)
    try:
        Path(args.out).write_text(page, encoding="utf-8")
    except OSError as exc:
        return _fail(f"cannot write {args.out}: {exc.strerror or exc}", EXIT_BAD_INPUT)
    print(f"wrote {args.out} ({len(page.encode()) / 1e6:.1f} MB)")
    return EXIT_OK


# -- judge check ------------------------------------------------------------------------------------

def cmd_judge(args) -> int:
    """`judge check`: the judge's server asked a handful of tiny requests (judges/check.py); nothing stored.
    `judge calibrate`: `cmd_calibrate`."""
    if args.judge_command == "calibrate":
        return cmd_calibrate(args)
    kind = named(args.judge)
    if not kind.makes_calls:
        return _fail(f"the {kind.name} judge makes no calls (no server, no key): there is nothing to check",
                     EXIT_BAD_INPUT)
    judge = _llm_judge(args, timeout=args.timeout, reasoning_effort=args.reasoning_effort)
    given = lifecycle.number_problems(dict(timeout=args.timeout, reasoning_effort=args.reasoning_effort))
    settings = [lifecycle.Problem(about, message) for about, message in judge.problems()]
    if problems := list(dict.fromkeys(lifecycle.judge_problems(judge) + settings + given)):  # before any request
        return _refuse(problems, judge)
    report = judge_check.check(judge.model, timeout=judge.timeout, reasoning_effort=judge.reasoning_effort,
                               listed=judge.list_priced, **judge.server())
    print(json.dumps(report.to_dict(), indent=1, ensure_ascii=False) if args.json else report.text())
    if not report.can_run:
        return _fail(f"the judge cannot run: {report.reason}", EXIT_FAILED)
    return EXIT_OK


def cmd_calibrate(args) -> int:
    """`judge calibrate` (runs/calibrate.py): the estimate, then the judge and the offline judge on the labelled
    items, their agreement with people printed and stored."""
    if not named(args.judge).makes_calls:
        extra = [flag for flag, value in (("--model", args.model), ("--base-url", args.base_url),
                                          ("--reasoning-effort", args.reasoning_effort), ("--max-cost", args.max_cost),
                                          ("--price-in", args.price_in), ("--price-out", args.price_out),
                                          ("--azure-endpoint", args.azure_endpoint),
                                          ("--api-version", args.api_version)) if value]
        if extra:
            return _fail(f"{', '.join(extra)} apply to an LLM judge (--judge openai or azure): the offline "
                         "judge makes no calls", EXIT_BAD_INPUT)
        judge = OfflineJudge()
    else:
        judge = _llm_judge(args, concurrency=args.concurrency, reasoning_effort=args.reasoning_effort,
                           price_in=args.price_in, price_out=args.price_out)
    given = lifecycle.number_problems(dict(concurrency=args.concurrency, reasoning_effort=args.reasoning_effort))
    settings = [lifecycle.Problem(about, message) for about, message in judge.problems()]
    needs = [] if args.estimate else lifecycle.judge_problems(judge)
    if problems := list(dict.fromkeys(needs + settings + given)):  # before the items are drawn
        return _refuse(problems, judge)
    plan = calibrate.plan(judge, sample=args.sample, seed=args.seed, max_cost=args.max_cost)
    if plan.prepared is not None:
        print(f"calibration: {len(plan.items)} labelled items (seed {args.seed}) of "
              f"{', '.join(s.name for s in plan.sets)}, scored by "
              f"{judge.model + ' and the offline judge' if judge.makes_calls else 'the offline judge'}",
              file=sys.stderr)
        if judge.makes_calls:
            print(plan.estimate.summary(), file=sys.stderr)
            if plan.estimate.total_calls:
                print(_estimated_cost(plan.estimate, judge, args), file=sys.stderr)
    if plan.problems:
        return _refuse(plan.problems, judge)
    if args.estimate:
        return EXIT_OK
    store = _open_store(args.db)
    key = judge.key()
    try:
        calibration_id, outcome = calibrate.calibrate(store, plan)
    except JudgeRefused as exc:
        text = str(exc).replace(key, "[the API key]") if key else str(exc)
        return _fail(f"the judge could not run: {text}\nnothing was stored", EXIT_FAILED)
    with store.lease():
        stored = latest_calibration(store.cursor(), judge.name, judge.model)
    if args.json:
        print(json.dumps({"calibration_id": calibration_id, "headline": stored.headline, "status": stored.status,
                          "n_items": stored.n_items, "n_failed": outcome.n_failed, "cost_usd": stored.cost_usd,
                          "note": stored.note, "rows": [{k: None if isinstance(v, float) and math.isnan(v) else v
                                                         for k, v in r.items()} for r in stored.rows]},
                         indent=1, ensure_ascii=False))
    else:
        print(stored.headline + "\n")
        print(stored.table().drop(columns="people said").to_string(index=False))
        spent = "" if stored.cost_usd is None else f"; the judge's calls cost {prices.usd(stored.cost_usd)}"
        print(f"\n{stored.note}{spent}; stored as {calibration_id} in {store.path}")
    if outcome.n_failed == outcome.n_items:
        return _fail("the judge could not run: no item was judged (see the judge's errors above)", EXIT_FAILED)
    return EXIT_OK


# -- gate ---------------------------------------------------------------------------------------------

def cmd_gate(args) -> int:
    if not Path(args.db).exists():  # a read: never create an empty database
        return _fail(f"no database at {args.db} (--db or $RAGSCOPE_DB)", EXIT_BAD_INPUT)
    store = _open_store(args.db)
    versions.know(store)  # a criterion's id in --tolerance is a metric's
    tolerances = parse_tolerances(args.tolerance)
    margins, require_mde = parse_deltas(args.margin, "--margin"), parse_deltas(args.require_mde, "--require-mde")
    result = gate(store, args.candidate, args.baseline, metrics=args.metrics,
                  tolerances=tolerances, alpha=args.alpha, margins=margins, require_mde=require_mde)
    print(text_report(result))
    for path, content in ((args.markdown, markdown_report(result).encode()), (args.junit, junit_xml(result))):
        if path:
            try:
                Path(path).write_bytes(content)
            except OSError as exc:
                return _fail(f"cannot write {path}: {exc.strerror or exc}", EXIT_BAD_INPUT)
    return EXIT_OK if result.passed else EXIT_FAILED


COMMANDS = {"run": cmd_run, "export": cmd_export, "metrics": cmd_metrics, "demo": cmd_demo, "runs": cmd_runs,
            "labels": cmd_labels, "view": cmd_view, "gate": cmd_gate, "report": cmd_report, "judge": cmd_judge}
