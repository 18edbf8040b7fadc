"""Driving the Evaluate screen in an AppTest: pick metrics, choose the OpenAI-compatible judge, start, wait."""
import json
import time

from evaluators import loaders
from evaluators.metrics import REGISTRY
from tests.helpers.seed_000 import SEED_000_CHUNKS


TIMEOUT = 300  # seconds; generous: the test machine is shared


def until_done(at, store, run_id):
    deadline = time.monotonic() + TIMEOUT
    while store.run(run_id)["status"] == "running":
        assert time.monotonic() < deadline, "the run did not end"
        time.sleep(0.1)
        at.run()  # what the fragment's timer does in a browser
    at.run()
    assert not at.exception, at.exception
    return store.run(run_id)


def metric_checkbox(at, label):
    return next(m.value for m in at.metric if m.label == label)


def _pick_metrics(at, **by_family):
    shown = {m.key for m in at.multiselect}  # the ranking family is offered only for golden sets with relevant ids
    for family in {m.family for m in REGISTRY.values()}:
        if f"eval-metrics-{family}" in shown:
            at.multiselect(key=f"eval-metrics-{family}").set_value(by_family.get(family, []))
    at.run()


def tiny_judged_data(store, tmp_path):
    """12 questions whose judge replies come from the scripted server (seed 000's case study)."""
    golden = tmp_path / "tiny_golden.jsonl"
    golden.write_text("".join(json.dumps({"question_id": f"t{i}", "question": f"Question {i}?",
                                          "reference": "Mostly exciting."}) + "\n" for i in range(12)))
    outputs = tmp_path / "tiny_outputs.jsonl"
    outputs.write_text("".join(json.dumps({"question_id": f"t{i}", "method": "local", "answer": "Game changer.",
                                           "contexts": list(SEED_000_CHUNKS)}) + "\n" for i in range(12)))
    return (store.save_dataset(loaders.load(golden, role="golden")).dataset_id,
            store.save_dataset(loaders.load(outputs, role="outputs")).dataset_id)


def start_and_wait(at, store):
    """Start the run chosen on the screen and follow it to its end: its id and its row of `runs`."""
    at.run()
    at.button(key="eval-start").click()
    at.run()
    run_id = at.selectbox(key="eval-run").value
    return run_id, until_done(at, store, run_id)


def choose_openai(at, golden, base_url):
    """The screen set to judge `golden` with the openai judge at `base_url` (test-model): exact_match and faithfulness."""
    at.run()  # the golden set list now holds it
    at.selectbox(key="eval-golden").set_value(golden)
    at.run()
    at.radio(key="eval-judge").set_value("openai")
    at.run()
    _pick_metrics(at, lexical=["exact_match"], claims=["faithfulness"])
    at.text_input(key="eval-base-url").input(base_url)
    at.text_input(key="eval-model").input("test-model")


def check_table(at):
    """The judge check's table on the screen, or None."""
    return next((d.value for d in at.dataframe if "capability" in d.value.columns), None)


def until_checked(at, seconds: float = 60):
    """The judge check's table, once the screen shows it (the page rerun as the fragment's timer would)."""
    deadline = time.monotonic() + seconds
    while check_table(at) is None:
        assert time.monotonic() < deadline, "the check did not end"
        time.sleep(0.2)
        at.run()
    assert not at.exception, at.exception
    return check_table(at)


def upload_criteria(at, name: str, data: bytes):
    """A criteria file uploaded in "Your criteria"; the page run."""
    at.file_uploader(key="eval-criteria-file").set_value((name, data, "application/octet-stream"))
    at.run()
    assert not at.exception, at.exception
    return at


def criteria_table(at):
    """The list of "Your criteria" on the screen, or None."""
    return next((d.value for d in at.dataframe if "version" in d.value.columns and "criterion" in d.value.columns),
                None)


def problems_table(at):
    """The problems table shown (file, row, field, message), or None."""
    return next((t.value for t in at.table if "message" in t.value.columns), None)
