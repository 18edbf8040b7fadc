"""A user's Python metrics (evaluators/metrics/plugins.py): declared in their own file, loaded and checked, scored
per sample with every failure in that cell (never a number), and found through an installed package's entry point."""
from __future__ import annotations

import hashlib
import math
import sys

import pytest

from evaluators.metrics import plugins
from evaluators.metrics.criteria import register as register_criterion
from evaluators.metrics.registry import USER, find
from evaluators.records import Chunk, GoldenItem, RagOutput, Sample
from evaluators.records.criteria import Criterion
from tests.helpers import ROOT
from tests.helpers.plugin_files import (METHODS, PLUGIN, QUESTIONS, answer, expected, user_metrics_kept, write_dist,
                                        write_plugin)

EXAMPLE = ROOT / "data" / "examples" / "plugin_metrics.py"


@pytest.fixture(autouse=True)
def _kept():
    with user_metrics_kept():
        yield


def sample(question="q0", method="local", text="It is 0.", contexts=("a chunk",), reference="It is 0."):
    return Sample(GoldenItem(question, f"What is {question}?", reference),
                  RagOutput(question, method, text, tuple(Chunk(str(i + 1), c) for i, c in enumerate(contexts))))


def test_a_plugin_file_registers_its_metrics_with_their_metadata_and_version(tmp_path):
    path = write_plugin(tmp_path)
    cites, stars = plugins.load(path)
    assert (cites.id, cites.family, cites.scale, cites.higher_is_better, cites.needs) == (
        "answer_has_citation", "plugins", "binary", True, ("contexts",))
    assert (stars.scale, stars.needs) == ("likert", ())
    version = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    assert cites.user == {"kind": "plugin", "version": version, "definition": {
        "id": "answer_has_citation", "family": "plugins", "scale": "binary", "higher_is_better": True,
        "needs": ["contexts"], "uses": [], "formula": "1 when the answer cites a chunk as [1].",
        "source": str(path.resolve())}}
    assert find("answer_stars") is stars and USER["answer_has_citation"] is cites
    assert version in cites.formula and str(path.resolve()) in cites.formula
    # an edited file is a new version of the same metrics
    write_plugin(tmp_path, PLUGIN + "\n# edited\n")
    assert plugins.load(path)[0].user["version"] != version


def test_cells_one_failure_per_cell_never_a_number(tmp_path):
    cites, stars = plugins.load(write_plugin(tmp_path))
    samples = [sample(q, m, answer(q, m)) for m in METHODS for q in QUESTIONS]
    for m in (cites, stars):
        for s, r in zip(samples, m.scored(samples)):
            value, status = expected(m.id, *s.key)
            assert (r.value, r.status) == (value, status), (m.id, s.key)
    raised = cites.scored([sample("q2")])[0]
    assert raised.detail == f"plug-in {(tmp_path / 'my_metrics.py').resolve()}: RuntimeError: cannot read this answer"
    off = stars.scored([sample("q3")])[0]
    assert "returned 7" in off.detail and "likert" in off.detail and "1-5" in off.detail
    assert stars.scored([sample("q4")])[0].detail == "no stars for this one"
    assert cites.scored([sample(contexts=())])[0].status == "not_applicable"  # needs contexts: never called


@pytest.mark.parametrize("returned, scale, why", [
    ("math.nan", "ratio", "nan"), ("'high'", "ratio", "'high' (str), not a number"), ("0.5", "binary", "0.5, outside"),
    ("101", "percent", "101, outside its percent scale (0-100)"), ("-0.01", "ratio", "-0.01, outside"),
    ("[1]", "likert", "[1] (list), not a number")])
def test_a_value_off_the_scale_is_that_cells_error_saying_what_came_back(tmp_path, returned, scale, why):
    path = write_plugin(tmp_path, f"import math\nfrom evaluators.metrics.plugins import plugin_metric\n"
                                  f"@plugin_metric('odd', scale={scale!r})\ndef odd(sample):\n"
                                  f"    return {returned} if sample.golden.question_id == 'bad' else "
                                  f"{1 if scale == 'likert' else 0}\n")
    (m,) = plugins.load(path)
    bad, good = m.scored([sample("bad"), sample("good")])
    assert bad.status == "judge_error" and bad.value is None and why in bad.detail and scale in bad.detail
    assert good.status == "ok" and not math.isnan(good.value)


def test_none_and_not_applicable_say_why(tmp_path):
    path = write_plugin(tmp_path, "from evaluators.metrics.plugins import plugin_metric, not_applicable\n"
                                  "@plugin_metric('maybe', scale='ratio')\ndef maybe(sample):\n"
                                  "    q = sample.golden.question_id\n"
                                  "    return None if q == 'a' else not_applicable('no answer to read') if q == 'b' "
                                  "else 0.25\n")
    (m,) = plugins.load(path)
    a, b, c = m.scored([sample("a"), sample("b"), sample("c")])
    assert (a.status, b.status, b.detail, c.value) == ("not_applicable", "not_applicable", "no answer to read", 0.25)
    assert "None" in a.detail


def test_the_shipped_example_loads_and_scores():
    cites, brevity = plugins.load(EXAMPLE)
    long_answer = " ".join(["word"] * 85)  # 85 words: 5 - (84 // 40) = 3
    results = [m.scored([sample(text="Paris [1].", contexts=("Paris is the capital.",)),
                         sample(text=long_answer + " [3]", contexts=("one",)), sample(text="")]) for m in (cites, brevity)]
    assert [r.value for r in results[0]] == [1.0, 0.0, 0.0]
    assert [r.value for r in results[1][:2]] == [5.0, 3.0] and results[1][2].status == "not_applicable"
    assert (cites.scale, brevity.scale) == ("binary", "likert")


@pytest.mark.parametrize("declaration, says", [
    ("@plugin_metric('exact_match', scale='binary')", "built-in metric"),
    ("@plugin_metric('id_recall', scale='ratio')", "built-in metric"),
    ("@plugin_metric('mine', scale='stars')", "unknown scale 'stars'"),
    ("@plugin_metric('mine', scale='label')", "unknown scale 'label'"),
    ("@plugin_metric('mine', scale='ratio', needs=('documents',))", "unknown input(s) 'documents'"),
    ("@plugin_metric('mine', scale='ratio', uses=('judge',))", "no judge"),
    ("@plugin_metric('mine', scale='ratio', needs='contexts')", "must be a list"),
    ("@plugin_metric('Mine-1', scale='ratio')", "not a metric id"),
    ("@plugin_metric('mine', scale='ratio', higher_is_better='yes')", "higher_is_better"),
])
def test_bad_metadata_is_refused_naming_the_file_and_the_metric(tmp_path, declaration, says):
    path = write_plugin(tmp_path, f"from evaluators.metrics.plugins import plugin_metric\n{declaration}\n"
                                  "def f(sample):\n    return 0\n")
    with pytest.raises(plugins.PluginError) as refused:
        plugins.load(path)
    assert str(path.resolve()) in str(refused.value) and says in str(refused.value)
    assert declaration.split("'")[1] in str(refused.value)
    assert "mine" not in USER


def test_an_id_of_a_criterion_is_refused(tmp_path):
    register_criterion(Criterion("names_the_source", "The answer says which passage it relies on."))
    path = write_plugin(tmp_path, "from evaluators.metrics.plugins import plugin_metric\n"
                                  "@plugin_metric('names_the_source', scale='binary')\ndef f(sample):\n    return 0\n")
    with pytest.raises(plugins.PluginError, match="names_the_source.*your criterion"):
        plugins.load(path)


@pytest.mark.parametrize("text, says", [
    ("def f(:\n", "SyntaxError"),
    ("raise ImportError('needs the acme package')\n", "importing it raised ImportError: needs the acme package"),
    ("x = 1\n", "declares no metric"),
    ("import sys\nsys.exit(3)\n", "importing it raised SystemExit: 3"),
    ("from evaluators.metrics.plugins import plugin_metric\n@plugin_metric('twice', scale='ratio')\ndef a(s):\n"
     "    return 0\n@plugin_metric('twice', scale='ratio')\ndef b(s):\n    return 0\n", "'twice' is declared twice"),
])
def test_a_file_that_cannot_be_used_is_one_error_naming_it(tmp_path, text, says):
    path = write_plugin(tmp_path, text)
    with pytest.raises(plugins.PluginError) as refused:
        plugins.load(path)
    assert str(path.resolve()) in str(refused.value) and says in str(refused.value)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(plugins.PluginError, match="nowhere.py: no such file"):
        plugins.load(tmp_path / "nowhere.py")


def test_a_stored_definition_shows_without_code_and_cannot_compute(tmp_path, monkeypatch):
    (cites, _) = plugins.load(write_plugin(tmp_path))
    assert plugins.stored(cites.user["definition"], cites.user["version"]) is cites  # its version is loaded here
    monkeypatch.setattr(plugins, "_loaded", {})  # a process that never loaded it (the app reading a stored run)
    shown = plugins.stored(cites.user["definition"], cites.user["version"])
    assert (shown.id, shown.scale, shown.needs, shown.user, shown.formula) == (
        cites.id, cites.scale, cites.needs, cites.user, cites.formula)
    assert plugins.loaded(cites) and not plugins.loaded(shown)
    with pytest.raises(RuntimeError, match="--plugin"):
        shown.scored([sample()])


def test_reload_stored_loads_an_unchanged_file_and_refuses_a_changed_one(tmp_path, monkeypatch):
    path = write_plugin(tmp_path)
    rows = [{"metric": m.id, "kind": "plugin", "version": m.user["version"], "definition": m.user["definition"]}
            for m in plugins.load(path)]
    USER.pop("answer_has_citation")
    USER.pop("answer_stars")
    said = plugins.reload_stored(rows)
    assert len(said) == 1 and "answer_has_citation, answer_stars" in said[0] and "unchanged" in said[0]
    assert plugins.loaded(USER["answer_stars"])
    assert plugins.reload_stored(rows) == []  # loaded at that version already
    monkeypatch.setattr(plugins, "_loaded", {})  # a new process: only shown from the stored run
    USER["answer_stars"] = plugins.stored(rows[1]["definition"], rows[1]["version"])
    write_plugin(tmp_path, PLUGIN + "\n# edited\n")
    with pytest.raises(plugins.PluginError, match="plug-in file changed since the run: .*pass --plugin"):
        plugins.reload_stored(rows)
    path.unlink()
    with pytest.raises(plugins.PluginError, match="gone"):
        plugins.reload_stored(rows)


def test_entry_points_of_an_installed_package(tmp_path, monkeypatch):
    one = ("from evaluators.metrics.plugins import plugin_metric\n"
           "@plugin_metric('acme_length', scale='percent', higher_is_better=None)\n"
           "def acme_length(sample):\n    return min(100, len(sample.output.answer))\n"
           "@plugin_metric('acme_empty', scale='binary', higher_is_better=False)\n"
           "def acme_empty(sample):\n    return float(not sample.output.answer.strip())\n")
    write_dist(tmp_path, {"acme": "acme_plugin", "acme_one": "acme_other:acme_words", "broken": "acme_broken"},
               {"acme_plugin": one, "acme_broken": "raise RuntimeError('acme is misconfigured')\n",
                "acme_other": "from evaluators.metrics.plugins import plugin_metric\n"
                              "@plugin_metric('acme_words', scale='percent')\n"
                              "def acme_words(sample):\n    return min(100, len(sample.output.answer.split()))\n"
                              "@plugin_metric('acme_unasked', scale='percent')\n"
                              "def acme_unasked(sample):\n    return 0\n"})
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("acme_plugin", "acme_other", "acme_broken"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    metrics, failures = plugins.load_entry_points()
    assert sorted(m.id for m in metrics) == ["acme_empty", "acme_length", "acme_words"]  # module:function: that one
    assert [m.user["definition"]["source"] for m in metrics if m.id == "acme_words"] == ["entry point acme_one"]
    assert len(failures) == 1 and "broken" in failures[0] and "acme is misconfigured" in failures[0]
    length = USER["acme_length"]
    assert length.user["version"] == hashlib.sha256((tmp_path / "acme_plugin.py").read_bytes()).hexdigest()[:12]
    assert length.scored([sample(text="four")])[0].value == 4.0
    assert "acme_unasked" not in USER


def test_the_readme_shows_the_shipped_example_as_it_is():
    section = (ROOT / "README.md").read_text().split("### Python metrics (plug-ins)")[1]
    assert EXAMPLE.read_text() in section


def test_a_plugin_imports_a_helper_module_of_its_own_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))
    folder = tmp_path / "my_rules"
    folder.mkdir()
    (folder / "ragscope_test_rules_helper.py").write_text("def words(text):\n    return len(text.split())\n")
    (folder / "short.py").write_text(
        "from ragscope_test_rules_helper import words\n"
        "from evaluators.metrics.plugins import plugin_metric\n\n"
        "@plugin_metric('short_answer', scale='binary', formula='1 when the answer has at most 5 words.')\n"
        "def short_answer(sample):\n"
        "    return 1.0 if words(sample.output.answer) <= 5 else 0.0\n")
    [short] = plugins.load(folder / "short.py")
    assert [r.value for r in short.scored([sample(text="It is 0."), sample(text="one two three four five six")])] \
        == [1.0, 0.0]
    assert sys.path[-1] == str(folder.resolve())
    sys.modules.pop("ragscope_test_rules_helper", None)
