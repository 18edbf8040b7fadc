"""Evaluate: choose a golden set, outputs, methods, metrics and the judge; see the cost; start a run
that works in the background; follow it live, cancel, resume or re-run its failed cells; open it.

Runs execute in `evaluators.runs.runner.RunManager` (one per process, held by st.cache_resource), so a
click elsewhere, another browser session or a closed tab does not stop them. The run panel polls
the manager every POLL_SECONDS in an st.fragment. An API key typed here stays in this session's
st.session_state and reaches the worker through the manager; it is never stored.
"""
from __future__ import annotations

import dataclasses
import json
import os

import pandas as pd
import streamlit as st

from evaluators.queries import datasets as qd
from evaluators.queries import calibrations as qcal
from evaluators.queries import evaluate as qe
from evaluators import queries
from evaluators.runs import budget, calibrate, lifecycle, sampling
from evaluators.judges import JUDGES, OfflineJudge, of_run, prices
from evaluators.judges.check import DEFAULT_TIMEOUT as CHECK_TIMEOUT
from evaluators.judges.check import CheckJob
from evaluators.judges.options import EFFORTS
from evaluators.metrics import REGISTRY, plugins, resolve
from evaluators.metrics.registry import INPUTS
from evaluators.records.run_status import RESUMABLE, RunStatus
from ui.common import md_escape, run_cost_caption, run_manager, store
from ui.criteria_form import your_criteria

POLL_SECONDS = 1.5
FAMILIES = list(dict.fromkeys(m.family for m in REGISTRY.values()))
KEY_STATE = "eval-api-key"  # the typed key: session memory only
# the environment variable the typed key stands in for (a judge's key_env): a key typed for one kind of judge's server
# is never offered to, nor sent to, another kind's
KEY_FOR_STATE = "eval-api-key-for"
CHECK_STATE = "eval-check-job"  # this session's judge check (judges.check.CheckJob): its thread, then its report
CALIBRATION_STATE = "eval-calibration-job"  # this session's calibration (runs.calibrate.CalibrationJob)
# What the screen asks for where a run has a problem (lifecycle.Prepared.problems), by what it is about
BLOCKERS = {"max_cost": "keep the estimate within the budget (Stop at cost)",
            "inputs": "choose at least one outputs dataset and method", "metrics": "choose at least one metric",
            "methods": "keep one outputs dataset per method"}


def cost(metric, judge) -> str:
    """What computing the metric costs with `judge` (a judge class): no model, the local embedder, or the judge."""
    if "judge" in metric.needs:
        return "judge calls" if judge.makes_calls else "offline judge (local heuristic)"
    if "embeddings" in metric.needs:
        return "embeddings (MiniLM, local)"
    return "deterministic"


@st.cache_resource(show_spinner=False, max_entries=8)
def stored_inputs(db: str, golden_id: str, outputs_ids: tuple[str, ...]) -> lifecycle.Inputs:
    """The records of these stored datasets, read once: datasets never change once stored, so they are cached by
    their ids; `db` keys the cache per database."""
    return lifecycle.Inputs.stored(store(), golden_id, outputs_ids)


def prepared(db: str, golden_id: str, outputs_ids: tuple[str, ...], spec: lifecycle.RunSpec) -> lifecycle.Prepared:
    """The run this choice makes: its samples (its sample drawn once), its problems, its estimate once asked for;
    cached by the choice, so a page run neither draws nor estimates it again. Start stores this very run."""
    # a plug-in's metric holds its function, which Streamlit cannot hash: it is the metric of its id and version
    plugged = tuple((m.id, m.user["version"]) for m in spec.plugins)
    return _prepared(db, golden_id, outputs_ids, dataclasses.replace(spec, plugins=()), plugged, spec)


@st.cache_resource(show_spinner=False, max_entries=32)
def _prepared(db: str, golden_id: str, outputs_ids: tuple[str, ...], key: lifecycle.RunSpec, plugged: tuple,
              _spec: lifecycle.RunSpec) -> lifecycle.Prepared:
    return lifecycle.prepare(stored_inputs(db, golden_id, outputs_ids), _spec)


def keep_key(widget: str, key_env: str) -> None:
    st.session_state[KEY_STATE] = st.session_state[widget]
    st.session_state[KEY_FOR_STATE] = key_env


def typed_key(key_env: str) -> str | None:
    """The key typed in this session for a judge whose key is `key_env`'s; None: none, or one for another server."""
    state = st.session_state
    return (state.get(KEY_STATE) or None) if state.get(KEY_FOR_STATE) == key_env else None


def key_input(widget: str, key_env: str, label: str = "API key") -> str | None:
    """A password field whose value outlives the widget (page switches) in this session only; `key_env`: where the
    judge's key comes from when none is typed (and which judges the typed key is for)."""
    typed = typed_key(key_env)
    if st.session_state.get(widget) and st.session_state[widget] != typed:  # another server's key: not shown here
        del st.session_state[widget]
    st.text_input(label, type="password", key=widget, value=typed or "", on_change=keep_key, args=(widget, key_env),
                  help="Kept in this browser session's memory only: never written to the database, the run's "
                       f"config or a log. Empty: the server's {key_env} is used, if set.")
    return st.session_state.get(widget) or typed


def price_fields(model: str | None, list_priced: bool = True) -> prices.Price | None:
    """The judge's prices per 1M tokens, prefilled with the model's list price whenever the model changes
    and editable (a contract price, another server); None until both are set. `list_priced` False: the name is no
    model's (an Azure deployment's), so nothing is prefilled."""
    # A widget's state is dropped while it is not drawn (offline judge chosen): prefill again then too.
    if st.session_state.get("eval-price-of") != (model, list_priced) or "eval-price-in" not in st.session_state:
        listed = prices.list_price(model) if list_priced else None
        st.session_state["eval-price-in"] = listed.input if listed else None
        st.session_state["eval-price-out"] = listed.output if listed else None
        st.session_state["eval-price-cached"] = listed.cached_input if listed else None
        st.session_state["eval-price-of"] = (model, list_priced)
    left, middle, right = st.columns(3)
    # value=None: the field may be empty (no price known); the session state holds the prefilled one
    price_in = left.number_input("Input price (USD per 1M tokens)", min_value=0.0, value=None, step=0.05,
                                 format="%.3f", key="eval-price-in", placeholder="unknown")
    cached = middle.number_input("Cached input price (USD per 1M tokens)", min_value=0.0, value=None, step=0.005,
                                 format="%.4f", key="eval-price-cached", placeholder="as input",
                                 help="Input the server serves from its prompt cache (a prefix it saw in the last "
                                      "minutes). Empty: priced as input.")
    price_out = right.number_input("Output price (USD per 1M tokens)", min_value=0.0, value=None, step=0.05,
                                   format="%.3f", key="eval-price-out", placeholder="unknown")
    listed = prices.list_price(model) if list_priced else None
    if not list_priced:
        st.caption("A deployment's name is yours, so no list price applies: enter the prices of the model it runs "
                   "(your contract's) to see the cost.")
    elif listed is None:
        st.caption(md_escape(f"No list price known for model {model or '(none named yet)'}: enter its prices to "
                             "see the cost (0 for a server of your own)."))
    elif listed == prices.Price(price_in, price_out, cached):
        st.caption(md_escape(f"List price of {model} as of {prices.AS_OF} ({prices.SOURCE}); edit for another "
                             "contract or server. Recorded with the run."))
    if price_in is None or price_out is None:
        return None
    return prices.Price(price_in, price_out, cached)


# What "Check the judge" asks for where the judge lacks something (Judge.lacks), by what it is about
CHECK_NEEDS = {"api_key": "enter the API key", "endpoint": "give the endpoint", "api_version": "give the API version"}


def judge_check(judge, api_key: str | None) -> None:
    """"Check the judge": a handful of tiny requests to the server in a background thread (a click elsewhere reruns
    the page, never cancels the check), polled until its report is in; nothing is stored."""
    job = st.session_state.get(CHECK_STATE)  # started by the button's callback, before this page run
    running = job is not None and not job.done
    needs = CHECK_NEEDS | {"model": f"name the {judge.model_label[0].lower()}"}  # the model, or the deployment
    lacking = [needs.get(about, message) for about, message in judge.lacks(api_key)]
    st.button("Check the judge", key="eval-check-judge", disabled=running or bool(lacking),
              on_click=start_check,
              help="Sends a handful of tiny requests to the server and shows what it supports (the JSON schema, JSON "
                   "mode, several choices, seed, the output limit's name, temperature 0, reasoning and cached tokens "
                   "in the usage), its latency and whether the model has a list price. Nothing is stored.")
    if not running and lacking:
        st.caption("To check the judge: " + "; ".join(lacking) + ".")
    st.fragment(run_every=POLL_SECONDS if running else None)(judge_check_result)(running)


def server_key(field) -> str:
    """The widget key of a judge's server field (OpenAIJudge.server_fields): eval-base-url, eval-endpoint..."""
    return "eval-" + field.name.replace("_", "-")


def start_check() -> None:
    """The button's callback: the check of the fields as they are now (a model typed just before the click included:
    a callback's args would be the page run's before)."""
    state = st.session_state
    model = (state.get("eval-model") or "").strip()
    if not model:
        return
    kind = JUDGES[state.get("eval-judge", OfflineJudge.name)]
    judge = kind(model=model, **{f.name: (state.get(server_key(f)) or "").strip() or None for f in kind.server_fields})
    api_key = typed_key(kind.key_env)  # the field's, kept as it changed
    state[CHECK_STATE] = CheckJob(model, listed=judge.list_priced, **judge.server()).start(
        api_key, reasoning_effort=state.get("eval-reasoning-effort"))


def judge_check_result(polling: bool) -> None:
    """The check's report once in: its verdict, one row per capability, latency and price."""
    job = st.session_state.get(CHECK_STATE)
    if job is None:
        return
    where = job.base_url or "the OpenAI API"
    if not job.done:
        st.info(md_escape(f"Checking {job.model} at {where}: a handful of tiny requests (each reply may take up to "
                          f"{CHECK_TIMEOUT:g} s)..."))
        return
    if polling:
        st.rerun()  # the check just ended: redraw the page (the button enabled again) and stop polling
    if job.error is not None:
        st.error("The check could not be made:")
        st.code(job.error, language=None)
        return
    report = job.result
    *details, verdict = report.lines()
    title = f"Judge check of {report.model} at {where}: {verdict}"
    (st.success if report.can_run else st.error)(md_escape(title))
    st.dataframe(pd.DataFrame(report.rows()), hide_index=True, width="stretch")
    st.caption(md_escape(" · ".join(details)))


@st.cache_resource(show_spinner=False, max_entries=16)
def calibration_plan(judge, sample: int, max_cost: float | None) -> calibrate.Plan:
    """The labelled items a calibration of this judge draws and its run prepared (the estimate), once per choice."""
    return calibrate.plan(judge, sample=sample, max_cost=max_cost)


def judge_calibration(judge, api_key: str | None) -> None:
    """"Calibrate the judge": the chosen judge and the offline judge on a stratified sample of the human-labelled
    items RAGScope ships, in a background thread polled like the check; then the stored latest calibration of this
    judge and model: its headline and table."""
    st.markdown("**How far this judge agrees with people**")
    job = st.session_state.get(CALIBRATION_STATE)
    running = job is not None and not job.done
    left, right = st.columns(2)
    sample = int(left.number_input("Labelled items", min_value=1, max_value=2000, value=calibrate.DEFAULT_SAMPLE,
                                   step=10, key="eval-cal-sample",
                                   help="A stratified sample (set x label) of the test parts of permissively licensed "
                                        "human-labelled sets shipped in data/calibration, never used to fit anything. "
                                        "The same number draws the same items."))
    max_cost = right.number_input("Stop calibrating at cost (USD)", min_value=0.01, value=None, step=0.5,
                                  format="%.2f", key="eval-cal-max-cost", placeholder="no limit",
                                  disabled=not judge.makes_calls)
    p = calibration_plan(judge, sample, max_cost if judge.makes_calls else None)
    if judge.makes_calls and p.prepared is not None:
        est, billed = p.estimate, judge.billed_price
        st.caption(md_escape(f"{len(p.items)} labelled items: {est.total_calls:,} judge calls, "
                             f"{est.total_input_tokens + est.total_output_tokens:,} tokens, cost (estimate) "
                             f"{prices.usd(est.cost(billed)) if billed else 'unknown (no price)'}; "
                             "and the offline judge on the same items, at no cost."))
    elif p.prepared is not None:
        st.caption(f"{len(p.items)} labelled items, offline judge: no calls, no key.")
    problems = [*p.problems, *lifecycle.judge_problems(judge, api_key)]
    st.button("Calibrate the judge", key="eval-calibrate", disabled=running or bool(problems),
              on_click=start_calibration, args=(p,),
              help="Scores the labelled items with this judge and with the offline judge (in a temporary database: "
                   "History is not touched) and stores their agreement with people per label, beside token F1's.")
    if problems and not running:
        st.caption(md_escape("To calibrate: " + "; ".join(dict.fromkeys(p.message for p in problems)) + "."))
    st.fragment(run_every=POLL_SECONDS if running else None)(calibration_result)(judge.name, judge.model, running)


def start_calibration(p: calibrate.Plan) -> None:
    """The button's callback: the calibration in a background thread, with the key as typed now (session only)."""
    st.session_state[CALIBRATION_STATE] = calibrate.CalibrationJob(p).start(store(), typed_key(p.judge.key_env))


def calibration_result(judge: str, model: str | None, polling: bool) -> None:
    """The calibration under way (its progress), then the latest stored one of this judge and model."""
    job = st.session_state.get(CALIBRATION_STATE)
    if job is not None and not job.done:
        done, total = job.progress
        st.info(f"Calibrating {job.plan.judge.model or 'the offline judge'} on {len(job.plan.items)} labelled items: "
                f"{done:,} of {total or '...'} cells scored, then the offline judge on the same items...")
        return
    if polling:
        st.rerun()  # it just ended: redraw the page (the button enabled again) and stop polling
    if job is not None and job.error is not None and (job.plan.judge.name, job.plan.judge.model) == (judge, model):
        st.error("The calibration could not be made:")
        st.code(job.error, language=None)
    found = qcal.latest_calibration(store().cursor(), judge, model)
    if found is None:
        st.caption("Not calibrated yet: its agreement with people shows here once it is.")
        return
    (st.success if found.status == RunStatus.FINISHED else st.warning)(md_escape(found.headline))
    st.dataframe(found.table(), hide_index=True, width="stretch")
    spent = "" if found.cost_usd is None else f" · its calls cost {prices.usd(found.cost_usd)}"
    st.caption(md_escape(f"{found.note}{spent} · {found.created_at:%Y-%m-%d %H:%M} UTC, seed {found.seed} · AUROC "
                         "for a yes/no label, Spearman for a graded one, 95% bootstrap CIs over questions; the offline "
                         "judge and token F1 on the same items."))


def budget_caption(run: dict) -> None:
    """What the run's judge has spent of its budget, as recorded after each batch (nothing for a run without one)."""
    limit = budget.of_config(json.loads(run["config"] or "{}"))
    spent = queries.run_cost(store(), run["run_id"]) if limit is not None else None
    if spent is not None and spent["usd"] is not None:
        st.caption(md_escape(f"Budget: {prices.usd(spent['usd'])} spent of {prices.usd(limit)} (the run stops when "
                             "its judge calls reach it)."))


def set_metrics(pick) -> None:
    for family in FAMILIES:
        st.session_state[f"eval-metrics-{family}"] = [m.id for m in REGISTRY.values() if m.family == family and pick(m)]


def progress_text(snap) -> str:
    if not snap.total:  # the worker has not reported yet
        return f"starting: reading the run, loading the judge · running for {qe.seconds_text(snap.elapsed)}"
    eta = snap.eta_seconds
    left = (f"about {qe.seconds_text(eta)} left" if eta is not None
            else "time left known once every metric has scored a batch")
    return (f"{snap.done:,} of {snap.total:,} cells ({100 * snap.fraction:.0f}%) · {left} · running for "
            f"{qe.seconds_text(snap.elapsed)}")


def under_way(polling: bool) -> None:
    """The runs this app is computing, at the top of the screen: their progress without scrolling past the form
    (details and Cancel in **Runs** below)."""
    live = [snap for run_id in run_manager().running() if (snap := run_manager().snapshot(run_id)) and snap.active]
    if polling and not live:
        st.rerun()  # the last one just ended: redraw the whole page
    for snap in live:
        run = store().run(snap.run_id)
        st.progress(snap.fraction, text=f"{md_escape(run['name'] if run else snap.run_id)} · {progress_text(snap)}")
    if live:
        st.caption("Under way: details and Cancel in **Runs** below. Cells are stored after each batch of samples.")


def run_panel(run_id: str, polling: bool) -> None:
    """One run: live progress while its worker computes, else its cells and what can be done next."""
    manager = run_manager()
    run = store().run(run_id)
    if run is None:
        st.warning("This run no longer exists in the database.")
        return
    snap = manager.snapshot(run_id)
    live = snap is not None and snap.active
    if polling and not live:
        st.rerun()  # the worker just ended: redraw the whole page (run list, sidebar) and stop polling
    status = snap.status if live else run["status"]
    judge = run["judge"] + (f" ({run['judge_model']})" if run["judge_model"] else "")
    note = sampling.run_note(run)
    st.text(f"{run['name']}\n{run_id} · judge {judge} · {run['n_samples']:,} samples x {len(run['metrics'])} metrics "
            f"· {status}" + (f"\n{note}" if note else ""))

    if live:
        st.progress(snap.fraction, text=progress_text(snap))
        if snap.metrics:
            st.dataframe(qe.progress(snap), hide_index=True, width="stretch",
                         column_config={"progress": st.column_config.ProgressColumn(min_value=0, max_value=1,
                                                                                     format="percent")})
        st.caption("Cells are stored after each batch of samples. This run continues if you leave this screen or "
                   "close the tab.")
        budget_caption(run)
        if snap.cancel_requested:
            st.info("Cancelling: the run stops after the metric in progress and keeps every cell computed so far. "
                    "Resume it later to compute the rest.")
        else:
            st.button("Cancel the run", key="eval-cancel", on_click=manager.cancel, args=(run_id,),
                      help="Stops after the metric in progress; computed cells are kept and the run can be resumed.")
        return

    tables = qe.view(store(), run_id)
    totals = tables["totals"].iloc[0]
    ok, not_applicable, failed, missing = (int(totals[c]) for c in ("Scored", "Not applicable", "Failed",
                                                                     "Not computed yet"))
    cols = st.columns(4)
    cols[0].metric("Scored", f"{ok:,}")
    cols[1].metric("Not applicable", f"{not_applicable:,}")
    cols[2].metric("Failed", f"{failed:,}", help="judge_error or timeout: a re-run computes these cells again")
    cols[3].metric("Not computed yet", f"{missing:,}")
    error = (snap.error if snap is not None else None) or run["error"]
    if status == RunStatus.FINISHED:
        st.success("Finished." + (f" {failed:,} cells failed: re-run them below." if failed else ""))
    elif status == RunStatus.QUEUED:
        st.info("Queued: the demo runs of a first start are computed one after another; this one starts when the "
                "one before it has finished.")
    elif status == RunStatus.RUNNING:
        st.warning("Marked running, but no worker of this app computes it: the app stopped while it ran. Resume it "
                   "to compute the rest.")
    elif status == RunStatus.BUDGET_REACHED:
        st.warning(f"{md_escape(error or status)}. The {ok + not_applicable + failed:,} cells computed so far are "
                   "stored; the cells of samples not judged yet are still to do: raise **Stop at cost** below and "
                   "resume (the replies already paid for come from the judge cache).")
    elif status in RESUMABLE:
        st.info(f"{status.capitalize()}: the {ok + not_applicable + failed:,} cells computed so far are stored. "
                "Resume to compute the rest.")
    if error and status not in (RunStatus.FINISHED, RunStatus.BUDGET_REACHED) and isinstance(error, str):
        st.error("The run stopped on this error:")
        st.code(error, language=None)

    api_key = None
    judge = of_run(run)
    sample = json.loads(run["config"] or "{}").get("sample")
    growable = bool(sample) and sample["n"] < sample["of"] and status not in RESUMABLE
    if judge.needs_key and (missing or failed or growable):
        api_key = key_input("eval-resume-key", judge.key_env, "API key for this run's judge")
        if not (api_key or os.environ.get(judge.key_env)):
            st.caption("Enter the judge's API key to resume or re-run (it is not stored with the run).")
    can_judge = not lifecycle.judge_problems(judge, api_key)
    limit = budget.of_config(json.loads(run["config"] or "{}"))
    if limit is not None and (missing or failed):  # a budget-stopped run resumes with a higher one
        limit = st.number_input("Stop at cost (USD)", min_value=min(0.01, limit), value=float(limit), step=1.0,
                                format="%.2f", key="eval-resume-max-cost",
                                help="The run's budget for its judge, recorded with it when you resume.")
    buttons = st.columns(3)
    if (missing or status in RESUMABLE) and buttons[0].button(
            "Resume", key="eval-resume", type="primary", disabled=not can_judge,
            help="Computes the cells not computed yet (and the failed ones); finished cells are kept."):
        lifecycle.resume(store(), run_id, max_cost=limit)
        manager.start(store(), run_id, api_key=api_key)
        st.rerun()
    if failed and buttons[1].button(f"Re-run {failed:,} failed cells", key="eval-retry", disabled=not can_judge):
        manager.start(store(), run_id, api_key=api_key)
        st.rerun()
    if status == RunStatus.FINISHED and buttons[2].button(
            "Open the results", key="eval-open-run", type="primary",
            help="Shows this run on Overview (and picks it in the sidebar)."):
        st.session_state["run_id"] = run_id  # the run in view (app.py's sidebar shows it)
        st.switch_page("pages/overview.py")
    if growable:
        grow_sample(run_id, sample, api_key, can_judge)
    run_cost_caption(run_id)
    budget_caption(run)
    with st.expander("Cells per metric", expanded=bool(failed)):
        st.dataframe(tables["cells"], hide_index=True, width="stretch")


def grow_sample(run_id: str, sample: dict, api_key: str | None, can_judge: bool) -> None:
    """A sampled run's sample grown to more questions: the same seed draws a sample holding the old one, so its
    cells are kept and only the new questions are judged (lifecycle.resume)."""
    left, right = st.columns(2)
    n = left.number_input("Grow the sample to N questions", min_value=sample["n"] + 1, max_value=sample["of"],
                          value=min(2 * sample["n"], sample["of"]), key=f"eval-grow-{run_id}")
    if right.button("Grow the sample", key="eval-grow", disabled=not can_judge,
                    help="Judges only the questions the larger sample adds; the cells scored so far are kept."):
        lifecycle.resume(store(), run_id, sample=int(n))
        run_manager().start(store(), run_id, api_key=api_key)
        st.rerun()


st.title("Evaluate")
st.caption("Score the answers of RAG methods against a golden set. A run works in the background: leave this "
           "screen, start other runs or close the tab, and come back to follow it.")
manager = run_manager()
busy = bool(manager.running())
st.fragment(run_every=POLL_SECONDS if busy else None)(under_way)(busy)
goldens = qd.golden_sets(store())
if goldens.empty:
    st.info("No golden set stored yet. Upload a golden set and RAG outputs on **Data**, then come back here.")
    st.page_link("pages/data.py", label="Go to Data", icon=":material/upload_file:")
    st.stop()

# -- what to evaluate ----------------------------------------------------------------------------
st.subheader("What to evaluate")
names = goldens.set_index("dataset_id")
if (stored := st.session_state.pop("eval-next", None)) and stored[0] in names.index:  # just stored on Data
    st.session_state["eval-golden"] = st.session_state["eval-outputs-of"] = stored[0]
    st.session_state["eval-outputs"] = stored[1]
golden_id = st.selectbox("Golden set", goldens["dataset_id"], key="eval-golden",
                         format_func=lambda d: f"{names.at[d, 'name']} · {names.at[d, 'n_golden']:,} questions ({d})")
n_questions = int(names.at[golden_id, "n_golden"])
offers = qd.outputs_for_golden(store(), golden_id)
offers = offers[offers["n_matched"] > 0]
if offers.empty:
    st.warning("No stored RAG outputs answer a question of this golden set. Upload the outputs on **Data** (their "
               "question ids must match the golden set's).")
    st.page_link("pages/data.py", label="Go to Data", icon=":material/upload_file:")
    st.stop()
dataset_ids = list(dict.fromkeys(offers["dataset_id"]))
labels = offers.groupby("dataset_id", sort=False).agg(name=("name", "first"), methods=("method", "nunique"),
                                                     answers=("n_answers", "sum"))
# First visit, or another golden set: keep the outputs that still apply, else its newest outputs.
if st.session_state.get("eval-outputs-of") != golden_id or "eval-outputs" not in st.session_state:
    kept = [d for d in st.session_state.get("eval-outputs", []) if d in dataset_ids]
    st.session_state["eval-outputs"] = kept or dataset_ids[:1]
    st.session_state["eval-outputs-of"] = golden_id
outputs_ids = st.multiselect(
    "RAG outputs", dataset_ids, key="eval-outputs",
    format_func=lambda d: f"{labels.at[d, 'name']} · {labels.at[d, 'methods']} method(s), {labels.at[d, 'answers']:,} "
                          f"answers ({d})")
chosen = offers[offers["dataset_id"].isin(outputs_ids)]
all_methods = sorted(chosen["method"].unique())
if st.session_state.get("eval-methods-of") != outputs_ids or "eval-methods" not in st.session_state:
    kept = [m for m in st.session_state.get("eval-methods", []) if m in all_methods]
    st.session_state["eval-methods"] = kept or all_methods
    st.session_state["eval-methods-of"] = outputs_ids
methods = st.multiselect("Methods", all_methods, key="eval-methods",
                         help="The methods of the chosen outputs to evaluate.")
picked = chosen[chosen["method"].isin(methods)]
if not picked.empty:
    table = picked.assign(coverage=[f"{n:,} of {n_questions:,}" for n in picked["n_matched"]])
    st.dataframe(table[["method", "name", "dataset_id", "n_answers", "coverage"]].rename(
        columns={"name": "file", "dataset_id": "dataset", "n_answers": "answers",
                 "coverage": "golden questions answered"}),
        hide_index=True, width="stretch")
twice = picked.groupby("method")["dataset_id"].nunique()
twice = sorted(twice[twice > 1].index)
if twice:
    st.error("These methods appear in more than one chosen outputs dataset, so their answers would overwrite each "
             "other: keep one dataset per method, or leave these methods out.")
    st.dataframe(picked[picked["method"].isin(twice)][["method", "name", "dataset_id"]], hide_index=True)
n_samples = int(picked["n_matched"].sum())
left, right = st.columns(2)
sample = left.number_input("Judge a sample of N questions", min_value=1, value=None, step=10, key="eval-sample",
                           placeholder="every question",
                           help="A random sample, stratified by question type; every method on the same questions. "
                                "Its screens say so, and its means and CIs are the sample's. Empty: every question.")
st.session_state.setdefault("eval-seed", sampling.new_seed())  # random, but shown: the same seed draws it again
seed = int(right.number_input("Seed of the sample", min_value=0, key="eval-seed", disabled=sample is None))
sample = int(sample) if sample is not None else None
sample_note = st.empty()  # what the sample drawn holds: once the run is prepared (Start)

# -- metrics -------------------------------------------------------------------------------------
st.subheader("Metrics")
for family in FAMILIES:
    st.session_state.setdefault(f"eval-metrics-{family}", [m.id for m in REGISTRY.values() if m.family == family])
kind = JUDGES[st.session_state.get("eval-judge", OfflineJudge.name)]  # the judge class chosen below
picks = st.columns(3)
picks[0].button("All metrics", on_click=set_metrics, args=(lambda m: True,), key="eval-pick-all")
picks[1].button("No judge", on_click=set_metrics, args=(lambda m: "judge" not in m.needs,), key="eval-pick-nojudge",
                help="Deterministic and embedding metrics only: no judge calls.")
picks[2].button("Deterministic only", on_click=set_metrics,
                args=(lambda m: not {"judge", "embeddings"} & set(m.needs),),
                key="eval-pick-lexical", help="No model at all: fast on any size.")
metric_ids: list[str] = []
cols = st.columns(2)
ranked = qd.names_relevant(store(), golden_id)
for i, family in enumerate(FAMILIES):
    members = [m for m in REGISTRY.values() if m.family == family]
    costs = sorted({cost(m, kind) for m in members})
    if family == "ranking" and not ranked:  # they could only say "not applicable"
        cols[i % 2].caption("Ranking (id_recall, id_ndcg, ...): this golden set names no relevant document "
                            "(relevant_ids, a qrels file on **Data**, or reference_contexts).")
        continue
    with cols[i % 2]:
        metric_ids += st.multiselect(f"{family.capitalize()} · {', '.join(costs)}", [m.id for m in members],
                                     key=f"eval-metrics-{family}")
# installed packages' metrics (the ragscope.metrics entry points the app loaded at start: app.py)
installed = {m.id: m for m in plugins.installed()}
if installed:
    with cols[len(FAMILIES) % 2]:
        metric_ids += st.multiselect("Plug-ins (installed packages) · deterministic", list(installed),
                                     default=list(installed), key="eval-metrics-plugins")
with st.expander("What each metric needs and costs"):
    st.dataframe(pd.DataFrame([{"metric": m.id, "family": m.family, "scale": m.scale, "seed": m.seed,
                                "needs": ", ".join(INPUTS[n] for n in m.needs) or "question and answer",
                                "uses when present": ", ".join(INPUTS[n] for n in m.uses),
                                "cost": cost(m, kind)} for m in [*REGISTRY.values(), *installed.values()]]),
                 hide_index=True, width="stretch")
    st.caption("Embeddings: the packaged MiniLM model on this machine (its first use in a process loads it, about "
               "20 s). Judge calls: see the estimate below.")

# -- the analyst's own criteria -----------------------------------------------------------------
criteria = your_criteria(kind)

# -- judge ---------------------------------------------------------------------------------------
st.subheader("Judge")
kind = JUDGES[st.radio("Judge", list(JUDGES), format_func=lambda name: JUDGES[name].label, key="eval-judge",
                      label_visibility="collapsed")]
model = api_key = price = effort = None
server: dict = {}  # where the judge's server is: its server fields' values
concurrency, repeats, batch = 8, 1, False
if kind.needs_network:
    left, right = st.columns(2)
    for i, field in enumerate(kind.server_fields):  # prefilled from the server's environment, as the SDK reads it
        server[field.name] = (left, right)[i % 2].text_input(
            field.label, value=os.environ.get(field.env, ""), key=server_key(field), placeholder=field.placeholder,
            help=field.help).strip() or None
    if len(kind.server_fields) % 2 == 0:
        left, right = right, left  # the fields go on alternating between the columns
    label, placeholder = kind.model_label
    model = right.text_input(label, key="eval-model", placeholder=placeholder).strip() or None
    with left:
        api_key = key_input("eval-key-input", kind.key_env)
    concurrency = int(right.number_input("Concurrent calls", min_value=1, max_value=64, value=8,
                                         key="eval-concurrency"))
    repeats = int(left.number_input("Repeats (holistic replies per sample)", min_value=1, max_value=10, value=1,
                                    key="eval-repeats",
                                    help="Ask for the 1-5 ratings this many times per sample: the scores use the "
                                         "mean (labels: the majority), and Overview and Claims show how much the "
                                         "replies vary. Costs that many holistic calls."))
    batch = kind.offers_batch and right.checkbox(
        "Batch API (half price, results within 24 h)", key="eval-batch",
        help="The run's requests go to OpenAI's Batch API in rounds (extraction and holistic, then verification), "
             "each answered within 24 hours at half the price. The run waits for them in the background; a resume "
             "picks up its batches.")
    effort = left.selectbox("Reasoning effort", [None, *EFFORTS], key="eval-reasoning-effort",
                            format_func=lambda e: "the server's default" if e is None else e,
                            help="For a reasoning model (gpt-5 family, o1/o3/o4): how much hidden reasoning a reply "
                                 "may spend (billed as output). Reasoning models are sent no temperature (only their "
                                 "default is taken); other models are sent temperature 0.")
    if not api_key and os.environ.get(kind.key_env):
        st.caption(f"No key entered: the server's {kind.key_env} will be used.")
    judge_check(kind(model=model, **server), api_key)
    price = price_fields(model, kind.list_priced)

metric_ids = [m.id for m in resolve(metric_ids)]  # catalogue order
judge = kind() if not kind.needs_network else kind(
    model=model, **server, concurrency=concurrency, repeats=repeats, batch=batch, reasoning_effort=effort,
    price_in=price.input if price else None, price_out=price.output if price else None,
    price_cached_in=price.cached_input if price else None)
judge_calibration(judge, api_key)

# -- cost and start ------------------------------------------------------------------------------
st.subheader("Start")
# The budget and the name are drawn below the estimate they depend on: their values from the session state
# The rank metrics are offered only where questions name relevant documents (above); their cut-offs are added up to
# the longest list (lifecycle.Prepared.metric_ids).
spec = lifecycle.RunSpec(judge, metrics=metric_ids, methods=methods, sample=sample, seed=seed, criteria=criteria,
                         plugins=tuple(m for i, m in installed.items() if i in metric_ids),
                         max_cost=st.session_state.get("eval-max-cost") if kind.makes_calls else None,
                         name=(st.session_state.get("eval-name") or "").strip() or None)
planned = prepared(store().path, golden_id, tuple(outputs_ids), spec)
if not planned.problems:
    metric_ids = planned.metric_ids
if planned.drawn is not None:
    n_samples, n_questions = len(planned.samples), planned.drawn.n
    sample_note.caption(f"Every question: only {planned.drawn.of:,} are answered." if planned.drawn.everything else
                        f"A {sampling.note(planned.sample)}, stratified by question type.")
st.caption(f"{n_samples:,} samples ({len(methods)} method{'s' if len(methods) != 1 else ''} x up to "
           f"{n_questions:,}{' sampled' if sample else ''} questions) x {len(metric_ids)} metrics = "
           f"{n_samples * len(metric_ids):,} cells")
if kind.makes_calls and n_samples and metric_ids and not twice:
    est = planned.estimate
    cols = st.columns(5)
    cols[0].metric("Judge calls", f"{est.total_calls:,}")
    cols[1].metric("Input tokens (estimate)", f"{est.total_input_tokens - est.total_cached_input_tokens:,}",
                   help="Input the server reads anew, at the input price.")
    cols[2].metric("Cached input tokens (estimate)", f"{est.total_cached_input_tokens:,}",
                   help="Input a server with a prompt cache as OpenAI's serves from it (the instructions every call "
                        "repeats, a sample's text its later calls repeat), at the cached-input price.")
    cols[3].metric("Output tokens (estimate)", f"{est.total_output_tokens:,}")
    # No price, no amount: "unknown" rather than a $0 that reads as free (no call at all is free, though)
    billed = prices.billed(price, batch)
    cols[4].metric("Cost (estimate)", prices.usd(est.cost(billed)) if billed or not est.total_calls else "unknown",
                   help=("The estimated tokens at the prices above, in USD"
                         + (f", at the Batch API's {prices.BATCH_DISCOUNT:.0%} of them." if batch else ".")) if price
                   else "No price for this model: enter its prices above.")
    st.number_input("Stop at cost (USD)", min_value=0.01, value=None, step=1.0, format="%.2f", key="eval-max-cost",
                    placeholder="no limit", help="A budget: a run estimated above it does not start, and the run stops "
                                                 "(resumable) when its recorded judge calls cost this much.")
    if est.total_calls:
        st.caption("Calls per purpose: " + ", ".join(f"{p} {n:,}" for p, n in est.calls.items())
                   + f" ({est.total_calls / est.samples:.1f} per sample). Tokens at about 4 characters each"
                   + est.reasoning_note() + "; retries and repairs add, replies cached from earlier runs cost nothing.")
    else:
        st.caption("No chosen metric needs the judge: no calls.")
elif not kind.makes_calls:
    st.caption("Offline judge: no calls, no key, no network.")

# "Can this run start?": the run's problems (the CLI refuses the same) and what its judge still lacks
problems = [*planned.problems, *lifecycle.judge_problems(judge, api_key)]
for problem in problems:
    if problem.about == "max_cost":
        st.error(f"The run would not start: {md_escape(problem.message)}.")
blockers = list(dict.fromkeys(BLOCKERS.get(p.about, p.message) for p in problems))
st.text_input("Run name", key="eval-name", placeholder=f"{n_samples} samples, {len(metric_ids)} metrics")
if blockers:
    st.caption("To start: " + "; ".join(blockers) + ".")
if st.button("Start the run", type="primary", disabled=bool(blockers), key="eval-start"):
    try:
        new_run = lifecycle.start(store(), planned)
    except (KeyError, ValueError) as exc:
        st.error("The run could not be created:")
        st.code(str(exc.args[0] if exc.args else exc), language=None)
    else:
        manager.start(store(), new_run, api_key=api_key)
        st.session_state["eval-run"] = new_run
        st.rerun()  # its progress at the top

# -- runs ----------------------------------------------------------------------------------------
st.subheader("Runs")
runs = qd.recent_runs(store())
if runs.empty:
    st.info("No run yet: start one above.")
    st.stop()
by_id = runs.set_index("run_id")
live = set(manager.running())
if live:
    st.caption(f"{len(live)} run{'s' if len(live) != 1 else ''} under way in this app (for every browser session).")
if st.session_state.get("eval-run") not in by_id.index:
    st.session_state["eval-run"] = next((r for r in runs["run_id"] if r in live), runs["run_id"].iloc[0])
# No status in the label: it changes while the page stands, and a widget's label is only redrawn with the page.
run_id = st.selectbox("Run", runs["run_id"], key="eval-run",
                      format_func=lambda r: f"{by_id.at[r, 'name']} · {by_id.at[r, 'judge']} · "
                                            f"{by_id.at[r, 'created_at']:%Y-%m-%d %H:%M} ({r})")
polling = run_id in live
st.fragment(run_every=POLL_SECONDS if polling else None)(run_panel)(run_id, polling)
