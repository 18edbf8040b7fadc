"""`pip install .`: the wheel pyproject.toml builds, installed into a folder of its own and used from another
folder, as someone who never cloned the repository would: the `ragscope` command and the README's Python example."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers import ROOT

BUILT_FROM = ("pyproject.toml", "README.md", "requirements.txt", "evaluators", "data/demo", "data/calibration")


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The wheel installed (without its dependencies: the test's venv has them) into a folder of its own. Built
    from a copy of the sources, so the build's own folders (build/, *.egg-info) never land in the checkout."""
    tmp = tmp_path_factory.mktemp("package")
    source = tmp / "source"
    for name in BUILT_FROM:
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        copy(ROOT / name, source / name, **({"ignore": shutil.ignore_patterns("__pycache__")}
                                            if (ROOT / name).is_dir() else {}))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp / "dist"), str(source)],
                   check=True, capture_output=True)
    wheel, = (tmp / "dist").glob("ragscope-*.whl")
    subprocess.run([*pip, "install", "--no-deps", "--target", str(tmp / "site"), str(wheel)], check=True,
                   capture_output=True)
    return tmp / "site"


def _elsewhere(installed: Path, tmp_path: Path, *command: str) -> subprocess.CompletedProcess:
    """`command` run in an empty folder, with the installed package (not the checkout) on the path."""
    env = {**os.environ, "PYTHONPATH": str(installed)}
    return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)


def test_the_ragscope_command_is_python_m_evaluators(installed, tmp_path):
    command = _elsewhere(installed, tmp_path, str(installed / "bin" / "ragscope"), "--help")
    module = _elsewhere(installed, tmp_path, sys.executable, "-m", "evaluators", "--help")
    assert command.returncode == 0, command.stderr
    assert command.stdout.startswith("usage: ragscope") and module.stdout.startswith("usage: python -m evaluators")
    description = "RAGScope metric engine"  # what follows the usage lines: the commands, the database, exit codes
    assert command.stdout.split(description)[1] == module.stdout.split(description)[1]
    where = _elsewhere(installed, tmp_path, sys.executable, "-c",
                       "import evaluators, evaluators.demo as d; print(evaluators.__file__); print(d.DEMO_GOLDEN)")
    package, golden = where.stdout.split()
    assert Path(package).is_relative_to(installed) and Path(golden).is_relative_to(installed)  # not the checkout's
    assert Path(golden).is_file()  # the demo data ship inside the package
    shipped = _elsewhere(installed, tmp_path, sys.executable, "-c", "from evaluators.loaders import calibration as c; "
                         "print(c.CALIBRATION_DIR); print(len(c.labelled_items()))")
    folder, n_items = shipped.stdout.split()
    assert Path(folder).is_relative_to(installed) and int(n_items) > 1000  # judge calibrate's items ship too
    weights = installed / "evaluators" / "judges" / "weights"
    assert {p.name for p in weights.iterdir()} >= {"nli_minilm.safetensors", "nli_minilm.json", "correctness.json"}


def test_the_readme_python_example_runs_from_any_folder(installed, tmp_path):
    example = re.search(r"## From Python\n.*?```python\n(.*?)```", (ROOT / "README.md").read_text(), re.DOTALL)[1]
    example += "\nprint(sorted(result.summary().index))\nprint(result.store.path)\n"
    ran = _elsewhere(installed, tmp_path, sys.executable, "-c", example)
    assert ran.returncode == 0, ran.stderr[-3000:]
    *_, metrics, db = ran.stdout.strip().splitlines()
    assert metrics == str(sorted(["exact_match", "rouge_l", "faithfulness", "answer_correctness_f1"]))
    assert Path(db).is_file() and not Path(db).is_relative_to(ROOT)
