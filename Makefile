# The two commands of README.md. Each sets up what it needs on a fresh machine.
PY := .venv/bin/python
STAMP := .venv/.installed

.PHONY: app test bench demo

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

app: $(STAMP)
	$(PY) -m evaluators demo
	$(PY) -m streamlit run app.py

test: $(STAMP)
	$(PY) -m pytest -q

demo: $(STAMP)
	$(PY) -m evaluators demo

bench: $(STAMP)
	$(PY) bench/bench_lexical.py
