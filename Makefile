# topospread: the two commands are `make run` and `make test`.
PYTHON ?= python3.11
VENV   ?= .venv
PY     := $(VENV)/bin/python
# The project with its test tools (make test, lint, bench) / with what serving needs only.
STAMP  := $(VENV)/.installed
RUN_STAMP := $(VENV)/.installed-run

.PHONY: run test test-ruff test-mypy test-bandit test-pytest lint bench bench-audit bench-report bench-costs bench-sampling bench-profile bench-preempt bench-scaleup bench-load bench-chain bench-scale bench-workloads bench-vs-scheduler properties-deep fuzz audit lock certs \
	clean browser control-plane cluster test-e2e test-chain report-screenshot image image-base image-tools test-image dist test-dist sbom \
	headlamp-plugin headlamp-fixtures headlamp-storybook test-plugin headlamp-screenshots

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

# The suite on every core (pytest-xdist, one test file per worker at a time so that a
# module's server or browser starts once; `make test PYTEST_FLAGS=` runs it in one
# process). ruff, mypy and bandit run beside it; -Otarget prints each one's output
# whole when it ends, and make fails when any of them does.
PYTEST_FLAGS ?= -n auto --dist loadfile

test: $(STAMP) browser
	@$(MAKE) --no-print-directory -j4 -Otarget test-ruff test-mypy test-bandit test-pytest

test-ruff: $(STAMP)
	$(VENV)/bin/ruff check webhook tests bench tools

test-mypy: $(STAMP)
	$(VENV)/bin/mypy

test-bandit: $(STAMP)
	$(VENV)/bin/bandit -q -r webhook bench/bench_load.py -b bandit-baseline.json

test-pytest: $(STAMP)
	$(PY) -m pytest -q $(PYTEST_FLAGS)

# The real control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
# kubectl, kwok) built from the Go module proxy into build/ (docs/testing.md). K8S picks the
# minor: 1.37 (default), 1.36 or 1.35, each from its wrapper module under tests/e2e/go/.
K8S ?= 1.37
control-plane:
	@command -v go >/dev/null 2>&1 || { echo "make control-plane needs Go (1.26+) on PATH" >&2; exit 2; }
	sh tests/e2e/go/build.sh $(CURDIR)/build $(K8S)

# A control plane with six kwok nodes in three zones, for a person; Ctrl-C stops it.
cluster: $(STAMP) control-plane
	K8S=$(K8S) $(PY) -m tests.e2e.controlplane

# The webhook installed into the real API server and every answer checked against the
# real scheduler and controllers (tests/e2e), the admission chain under load and faults
# (tests/e2e/test_chain.py) among them. Run by .ci/run after make test. `make test-chain`
# runs the chain's test alone.
E2E_FLAGS ?=
test-e2e: $(STAMP) control-plane
	K8S=$(K8S) $(PY) -m pytest -q --e2e tests/e2e $(E2E_FLAGS)

test-chain: $(STAMP) control-plane
	K8S=$(K8S) $(PY) -m pytest -q --e2e tests/e2e/test_chain.py $(E2E_FLAGS)

# kube-scheduler binding the pods a zone loss displaces, beside `audit --without-nodes`
# re-placing them, on the same cluster (bench/bench_vs_scheduler.py; docs/performance.md).
BENCH_VS_FLAGS ?= --runs 1
bench-vs-scheduler: $(STAMP) control-plane
	$(PY) bench/bench_vs_scheduler.py $(BENCH_VS_FLAGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check webhook tests bench tools

bench: $(STAMP)
	$(PY) bench/bench_scheduling.py
	$(PY) bench/bench_profile.py
	$(PY) bench/bench_audit.py

bench-audit: $(STAMP)
	$(PY) bench/bench_audit.py

# bench-audit with `audit -o html` timed against `-o json` in the same runs.
bench-report: $(STAMP)
	$(PY) bench/bench_audit.py --html

# bench-audit's cluster: `audit --deletion-costs` timed against the audit in the same runs.
bench-costs: $(STAMP)
	$(PY) bench/bench_audit.py --only audit --costs

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

# audit -o json and a replica (serve --snapshot, one worker) on 20,000 and 65,000 nodes,
# 30 pods per node: time, peak RSS, ready time, memory held; and the sampled zone drill
# (--without-nodes zone-a, adaptive percentageOfNodesToScore): time, peak RSS, pods/s
# (docs/performance.md).
bench-scale: $(STAMP)
	$(PY) bench/bench_scale.py

bench-load: $(STAMP)
	$(PY) bench/bench_load.py

# The webhook in the real admission chain: two replicas, the controllers creating 3,000
# pods with and without it, then each fault under that load (bench/bench_chain.py;
# docs/performance.md). About 40 minutes on 2 cores.
BENCH_CHAIN_FLAGS ?= --json build/bench-chain.json
bench-chain: $(STAMP) control-plane
	$(PY) bench/bench_chain.py $(BENCH_CHAIN_FLAGS)

# The workload drills (--scale, --rollout) on the audit benchmark's cluster
# (docs/workloads.md).
bench-workloads: $(STAMP)
	$(PY) bench/bench_workloads.py

# The properties drawing from tests/clusters.py, 2,000 examples each (the suite runs
# their own counts), and the placement property beside them (the long profile's 5,000).
properties-deep: $(STAMP)
	HYPOTHESIS_PROFILE=long $(PY) -m pytest -q -p no:randomly tests/audit/test_workload_properties.py \
	  tests/audit/test_drill_properties.py tests/controllers/test_costs.py \
	  tests/scheduler/test_properties.py::test_replicas_never_exceed_max_skew

fuzz: $(STAMP)
	HYPOTHESIS_PROFILE=long $(PY) -m pytest -q tests/server/test_fuzz.py

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

# ---- The Headlamp plugin (headlamp-plugin/, docs/headlamp.md) ---------------------------
# Node.js 20+ and npm; `npm ci` from the committed package-lock.json.
PLUGIN := headlamp-plugin
PLUGIN_OUT := build/headlamp-plugin
PLUGIN_VERSION = $(shell sed -n 's/^  "version": "\(.*\)",$$/\1/p' $(PLUGIN)/package.json)
PLUGIN_TAR = $(PLUGIN_OUT)/topospread-headlamp-plugin-$(PLUGIN_VERSION).tar.gz
# Where the release publishes the tarball (ArtifactHub's archive-url); default: the file.
PLUGIN_ARCHIVE_URL ?= file://$(abspath $(PLUGIN_TAR))
HEADLAMP_PLUGIN := cd $(PLUGIN) && ./node_modules/.bin/headlamp-plugin

$(PLUGIN)/node_modules/.installed: $(PLUGIN)/package.json $(PLUGIN)/package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "the Headlamp plugin needs Node.js 20+ and npm on PATH" >&2; exit 2; }
	cd $(PLUGIN) && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# main.js and package.json in the tarball Headlamp installs, with its ArtifactHub metadata.
headlamp-plugin: $(PLUGIN)/node_modules/.installed
	$(HEADLAMP_PLUGIN) build
	$(HEADLAMP_PLUGIN) package
	@mkdir -p $(PLUGIN_OUT)
	mv $(PLUGIN)/topospread-headlamp-plugin-$(PLUGIN_VERSION).tar.gz $(PLUGIN_TAR)
	sed -e 's|@VERSION@|$(PLUGIN_VERSION)|' -e "s|@CREATED@|$$(date -u +%Y-%m-%dT%H:%M:%SZ)|" \
	  -e 's|@ARCHIVE_URL@|$(PLUGIN_ARCHIVE_URL)|' \
	  -e "s|@SHA256@|$$(sha256sum $(PLUGIN_TAR) | cut -d' ' -f1)|" \
	  $(PLUGIN)/artifacthub-pkg.yml.in | grep -v '^#' > $(PLUGIN_OUT)/artifacthub-pkg.yml
	@echo "$(PLUGIN_TAR) and $(PLUGIN_OUT)/artifacthub-pkg.yml"

# The audit documents the plugin's tests and stories read, made now by the real CLI.
headlamp-fixtures: $(STAMP)
	$(PY) -m tests.headlamp.fixtures $(PLUGIN)/fixtures

# The plugin's Storybook, built statically (headlamp-plugin/storybook-static).
headlamp-storybook: $(PLUGIN)/node_modules/.installed headlamp-fixtures
	cd $(PLUGIN) && ./node_modules/.bin/storybook build --quiet \
	  -c node_modules/@kinvolk/headlamp-plugin/config/.storybook -o storybook-static

# tsc, eslint and Vitest on the CLI's documents; the tarball and its metadata; then every
# story in Chromium (bars against the JSON, no console error; screenshots in build/).
# Run by .ci/run after make test.
test-plugin: $(STAMP) browser headlamp-plugin headlamp-storybook
	$(HEADLAMP_PLUGIN) tsc
	$(HEADLAMP_PLUGIN) lint
	$(HEADLAMP_PLUGIN) test -- --run
	$(PY) -m tests.headlamp.package $(PLUGIN_TAR) $(PLUGIN_OUT)/artifacthub-pkg.yml
	$(PY) -m tests.headlamp.storybook $(PLUGIN)/storybook-static $(PLUGIN)/fixtures $(PLUGIN_OUT)/screenshots

# docs/headlamp-detail.png and docs/headlamp-cluster.png, from the stories above.
headlamp-screenshots: $(STAMP) browser headlamp-storybook
	$(PY) -m tests.headlamp.storybook $(PLUGIN)/storybook-static $(PLUGIN)/fixtures $(PLUGIN_OUT)/screenshots --docs docs

# ---- The image and the package as users get them (docs/install.md) ----------------------
# One version, webhook/__init__.py: the wheel's metadata, `--version`, the image's label.
VERSION := $(shell sed -n 's/^__version__ = "\(.*\)"$$/\1/p' webhook/__init__.py)
IMAGE ?= localhost/topospread:$(VERSION)
IMAGE_DIR := build/image
# The base image: empty means one made from Debian's archive by mmdebstrap (bookworm
# minbase with Python 3.11), cached as a tarball in $(IMAGE_DIR); or name one, e.g.
# PYTHON_IMAGE=docker.io/library/python:3.11-slim-bookworm where a registry is reachable.
PYTHON_IMAGE ?=
DEBIAN_SUITE := bookworm
DEBIAN_MIRROR ?= http://deb.debian.org/debian
DEBIAN_SECURITY ?= http://deb.debian.org/debian-security
BASE_TAR := $(IMAGE_DIR)/base-$(DEBIAN_SUITE).tar
BASE_IMAGE := localhost/topospread-base:$(DEBIAN_SUITE)
# pip inside the build trusts the CA bundle pip trusts here (PIP_CERT, else pip's own
# `global.cert`): a network whose TLS a proxy re-signs. Given as a build secret.
PIP_CA ?= $(or $(PIP_CERT),$(shell $(PYTHON) -m pip config get global.cert 2>/dev/null))
comma := ,
IMAGE_CA_ARGS := $(if $(wildcard $(PIP_CA)),--secret id=pip-ca$(comma)src=$(abspath $(PIP_CA)))
IMAGE_TOOLS := podman buildah mmdebstrap uidmap fuse-overlayfs eatmydata
IMAGE_BUILD_FLAGS ?= --isolation chroot

# podman, buildah and mmdebstrap from apt-get when missing (as `browser` installs
# chromium); unlike the browser tests, the image cannot be tested without them: fail.
image-tools:
	@missing=""; for tool in podman buildah mmdebstrap newuidmap fuse-overlayfs eatmydata unshare chroot; do \
	  command -v $$tool >/dev/null 2>&1 || missing="$$missing $$tool"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing$$missing for the image (apt-get: $(IMAGE_TOOLS))"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt-get install -y -q --no-install-recommends $(IMAGE_TOOLS) >/dev/null 2>&1 \
	    || { apt-get update -q >/dev/null 2>&1 \
	         && apt-get install -y -q --no-install-recommends $(IMAGE_TOOLS) >/dev/null; } \
	    || { echo "FAILED: could not install $(IMAGE_TOOLS): the image cannot be built" >&2; exit 1; }; \
	  else \
	    echo "FAILED: missing$$missing (install $(IMAGE_TOOLS)): the image cannot be built" >&2; \
	    exit 1; \
	  fi; \
	fi

$(BASE_TAR): | image-tools
	@mkdir -p $(IMAGE_DIR)
	mmdebstrap --variant=minbase --include=python3,python3-venv,python-is-python3,ca-certificates \
	  --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr --hook-dir=/usr/share/mmdebstrap/hooks/eatmydata \
	  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
	  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
	  --dpkgopt='path-exclude=/usr/share/info/*' \
	  --format=tar $(DEBIAN_SUITE) $@.tmp \
	  "deb $(DEBIAN_MIRROR) $(DEBIAN_SUITE) main" "deb $(DEBIAN_MIRROR) $(DEBIAN_SUITE)-updates main" \
	  "deb $(DEBIAN_SECURITY) $(DEBIAN_SUITE)-security main"
	@mv $@.tmp $@

# The base is imported from the tarball when podman's store lacks it; the store keeps it
# across checkouts. `make image-base` makes both again (Debian's updates).
image: image-tools
	@[ -n "$(PYTHON_IMAGE)" ] || podman image exists $(BASE_IMAGE) || { \
	  $(MAKE) --no-print-directory $(BASE_TAR) && \
	  podman import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
	    --change 'ENV LANG=C.UTF-8' --change 'CMD ["python3"]' $(BASE_TAR) $(BASE_IMAGE) >/dev/null; }
	podman build $(IMAGE_BUILD_FLAGS) $(IMAGE_CA_ARGS) \
	  --build-arg PYTHON_IMAGE=$(or $(PYTHON_IMAGE),$(BASE_IMAGE)) --build-arg VERSION=$(VERSION) \
	  -t $(IMAGE) .
	@podman image inspect --format '$(IMAGE): {{.Size}} bytes, version {{index .Config.Labels "org.opencontainers.image.version"}}' $(IMAGE)

image-base: image-tools
	rm -f $(BASE_TAR)
	podman rmi --force $(BASE_IMAGE) >/dev/null 2>&1 || true
	$(MAKE) --no-print-directory image

# Builds the image, then serves from it (tests/image/: TLS, reviews, metrics, SIGTERM,
# user, read-only root, no compiler or pip, size); not part of `make test`.
test-image: image $(STAMP)
	TOPOSPREAD_IMAGE=$(IMAGE) $(PY) -m pytest -q -s -p no:cacheprovider tests/image

# The sdist and the wheel in dist/, checked by twine.
dist: $(STAMP)
	rm -rf dist
	$(PY) -m build --outdir dist .
	$(VENV)/bin/twine check --strict dist/*

# The wheel installed into a fresh virtualenv outside the checkout, its commands run.
test-dist: $(STAMP)
	TOPOSPREAD_DIST=1 $(PY) -m pytest -q -p no:cacheprovider tests/wheel

# CycloneDX JSON of the image's virtualenv, read from the image's own filesystem:
# the distributions on the sys.path of the image's /opt/topospread/bin/python.
sbom: image $(STAMP)
	$(PY) -m pip install -q 'cyclonedx-bom>=4'
	$(PY) -m tests.image.sbom $(IMAGE) $(IMAGE_DIR)/sbom.cdx.json

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache .mypy_cache .hypothesis \
	  $(PLUGIN)/node_modules $(PLUGIN)/dist $(PLUGIN)/fixtures $(PLUGIN)/storybook-static
