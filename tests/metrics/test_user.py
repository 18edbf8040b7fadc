"""The users' metrics of stored runs registered in a process (metrics/user.py): what the screens read, without
ever hiding the code of a plug-in loaded for a new run, and without a page breaking on a definition this version
no longer takes."""
import json

from evaluators import evaluate
from evaluators.metrics import user
from evaluators.metrics.plugins import loaded
from evaluators.metrics.registry import USER, lookup
from evaluators.store import open_store
from tests.helpers.plugin_files import METHODS, QUESTIONS, user_metrics_kept, write_inputs, write_plugin

ONE = ("from evaluators.metrics.plugins import plugin_metric\n"
       "@plugin_metric('answer_words', scale='percent', higher_is_better=None)\n"
       "def answer_words(sample):\n    return min(100, len(sample.output.answer.split()) * {k})\n")


def test_a_run_of_another_version_read_meanwhile_does_not_hide_the_loaded_plugin(tmp_path):
    golden, outputs = write_inputs(tmp_path)
    db = tmp_path / "runs.duckdb"
    with user_metrics_kept():
        first = write_plugin(tmp_path, ONE.format(k=1), "words_v1.py")
        evaluate(golden, outputs, metrics=["exact_match", "answer_words"], plugins=[first], db=db)
        second = write_plugin(tmp_path, ONE.format(k=2), "words_v2.py")
        evaluate(golden, outputs, metrics=["exact_match", "answer_words"], plugins=[second], db=db)  # the loaded one: version 2
        store = open_store(db)
        USER.clear()
        user.remember(store)  # a screen reads every run: the newest's version (2) is the loaded one's
        assert loaded(USER["answer_words"])
        again = evaluate(golden, outputs, metrics=["exact_match", "answer_words"], plugins=[first], db=db)  # version 1 loaded again
        user.remember(store)
        values = again.scores.query("metric == 'answer_words'")
        assert len(values) == len(QUESTIONS) * len(METHODS) and set(values["status"]) == {"ok"}
        assert loaded(USER["answer_words"]) and USER["answer_words"].user["version"] == store.user_metrics(
            again.run_id)[0]["version"]


def test_a_stored_definition_this_version_refuses_is_skipped_and_its_scores_still_show(tmp_path):
    golden, outputs = write_inputs(tmp_path)
    db = tmp_path / "runs.duckdb"
    with user_metrics_kept():
        from evaluators import Criterion

        result = evaluate(golden, outputs, metrics=["exact_match"], db=db,
                          criteria=[Criterion("plain_words", "Plain words.", scale="1-5")])
        store = open_store(db)
        bad = dict(store.user_metrics(result.run_id)[0]["definition"], scale="1-10")  # as a later version would refuse
        store.cursor().execute("UPDATE user_metrics SET definition = ?, version = 'other' WHERE run_id = ?",
                               [json.dumps(bad), result.run_id])
        USER.clear()
        user.remember(store)  # no ValueError: every page calls this
        assert "plain_words" not in USER and lookup("plain_words").family == "other"
