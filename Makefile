# topospread: the two commands are `make run` and `make test`.
PYTHON ?= python3.11
VENV   ?= .venv
PY     := $(VENV)/bin/python
# The project with its test tools (make test, lint, bench) / with what serving needs only.
STAMP  := $(VENV)/.installed
RUN_STAMP := $(VENV)/.installed-run

.PHONY: run test lint bench bench-audit bench-report bench-sampling bench-profile bench-preempt bench-scaleup bench-load fuzz audit lock certs \
	clean browser report-screenshot

$(VENV)/bin/python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) (Python 3.11+) on PATH" >&2; exit 2; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(STAMP): $(VENV)/bin/python pyproject.toml
	$(PY) -m pip install -q -e '.[test]'
	@touch $(STAMP) $(RUN_STAMP)

$(RUN_STAMP): $(VENV)/bin/python pyproject.toml
	$(PY) -m pip install -q -e .
	@touch $(RUN_STAMP)

certs/tls.crt: | $(RUN_STAMP)
	$(VENV)/bin/topospread certs --service topospread --namespace topospread --out certs

run: $(RUN_STAMP) certs/tls.crt
	$(VENV)/bin/topospread serve --cert-dir certs --bind 127.0.0.1:8443

# Debian's chromium for the browser tests (tests/browser.py), installed only when missing
# and only where apt-get runs as root (CI); the package lists are refreshed only if the
# install fails without. Elsewhere the browser tests skip and say why.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing chromium for the browser tests (apt-get)"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt-get install -y -q --no-install-recommends chromium >/dev/null 2>&1 \
	    || { apt-get update -q >/dev/null 2>&1 \
	         && apt-get install -y -q --no-install-recommends chromium >/dev/null 2>&1; } \
	    || echo "chromium could not be installed: the browser tests will skip" >&2; \
	  else \
	    echo "no chromium (and no apt-get as root to install it): the browser tests will skip" >&2; \
	  fi; }

test: $(STAMP) browser
	$(VENV)/bin/ruff check webhook tests bench
	$(VENV)/bin/mypy
	$(VENV)/bin/bandit -q -r webhook bench/bench_load.py -b bandit-baseline.json
	$(PY) -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check webhook tests bench

bench: $(STAMP)
	$(PY) bench/bench_scheduling.py
	$(PY) bench/bench_profile.py
	$(PY) bench/bench_audit.py

bench-audit: $(STAMP)
	$(PY) bench/bench_audit.py

# bench-audit with `audit -o html` timed against `-o json` in the same runs.
bench-report: $(STAMP)
	$(PY) bench/bench_audit.py --html

# docs/report.png, the README's picture: the demo snapshot's audit page (with --plan),
# rendered by the headless Chromium the browser tests use.
report-screenshot: $(STAMP) browser
	$(VENV)/bin/topospread audit --snapshot webhook/data/demo-snapshot.yaml --plan -o html \
	  > $(VENV)/report-demo.html || [ $$? = 1 ]
	$(PY) -m tests.browser $(VENV)/report-demo.html docs/report.png 880 720

# The scale-up diagnosis of the zone drill's pending pods against the drill's own time
# (docs/performance.md).
bench-scaleup: $(STAMP)
	$(PY) bench/bench_scaleup.py

# kube-scheduler's whole default profile on the issue-10 cluster (5,000 varied nodes,
# 150,000 pods with affinity terms): docs/performance.md.
bench-profile: $(STAMP)
	$(PY) bench/bench_profile.py

bench-preempt: $(STAMP)
	$(PY) bench/bench_preempt.py

# simulate --replicas 10 --runs 20 against one sampled run, on the 5,000-node cluster.
bench-sampling: $(STAMP)
	$(PY) bench/bench_audit.py --only sampled,runs20 --sampling

bench-load: $(STAMP)
	$(PY) bench/bench_load.py

fuzz: $(STAMP)
	HYPOTHESIS_PROFILE=long $(PY) -m pytest -q tests/test_fuzz.py

# bandit against the reviewed findings in bandit-baseline.json, then pip-audit on the
# pinned runtime dependencies; --strict fails when a package could not be checked.
audit: $(STAMP)
	$(VENV)/bin/bandit -q -r webhook bench/bench_load.py -b bandit-baseline.json
	$(VENV)/bin/pip-audit --strict --progress-spinner off --disable-pip --require-hashes \
	  -r requirements.lock

# Re-pin the runtime dependencies of pyproject.toml, with hashes, into requirements.lock.
lock: $(STAMP)
	$(PY) -m pip install -q pip-tools
	$(VENV)/bin/pip-compile --quiet --generate-hashes --strip-extras --allow-unsafe \
	  --no-emit-index-url --no-emit-find-links --output-file requirements.lock pyproject.toml

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache .mypy_cache .hypothesis
