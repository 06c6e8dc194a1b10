# The two commands a newcomer needs: `make demo` and `make test`. `make help` lists the rest.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-tools
# The project's own packages, byte-compiled at install: compileall writes __pycache__ even
# under PYTHONDONTWRITEBYTECODE=1, and every process then reads it (a service's start would
# otherwise compile them again each time).
PACKAGES := libs/grpc-aio-resilience/src grpc_resilience_mesh
PYTEST_ARGS ?=

.DEFAULT_GOAL := help

.PHONY: help venv demo demo-loadgen xds-plane verify test check up mesh-up protos docs lint typecheck bench clean

help: ## List the targets
	@grep -hE '^[a-z][a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | sort | \
		awk 'BEGIN {FS = ":.*## "}; {printf "  make %-12s %s\n", $$1, $$2}'

include deploy/compose.mk

# setuptools warns on every editable install that folders named like the packages may shadow
# them (a box of asterisks, the only thing a quiet install printed): here those folders are
# the packages themselves, so the warning says nothing; it is filtered out, nothing else.
PIP_INSTALL := PYTHONWARNINGS='ignore:Editable installation:UserWarning' $(BIN)/python -m pip \
	install --quiet

# The packages go in with uv (from PyPI, put into the venv by pip first): it fetches and
# unpacks in parallel, 6 s for the demo's set on this project's machine where pip took 22-31 s
# from its own cache (2026-12-04). Where uv cannot (no uv wheel for the platform, an index only
# pip's configuration names), pip installs the same ranges from pyproject.toml. Both byte-compile
# what they install (pip does by default, uv with --compile-bytecode: 8 s more for the demo's
# set): under PYTHONDONTWRITEBYTECODE=1 nothing else would, and every process would compile
# grpc, protobuf, redis and OpenTelemetry again at each start (a receipt worker's imports took
# 1.5-2.2 s without it, 0.7-0.9 s with it; `make test`'s pytest 853 s without, 714 s with).
INSTALL = $(PIP_INSTALL) uv && $(BIN)/uv pip install --quiet --native-tls --compile-bytecode \
	--python $(BIN)/python $(1) \
	|| { echo "uv could not install; pip will (slower)"; \
	     $(PIP_INSTALL) --upgrade pip && $(PIP_INSTALL) $(1); }

$(STAMP): pyproject.toml libs/grpc-aio-resilience/pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(call INSTALL,-e ./libs/grpc-aio-resilience -e '.[dev]')
	$(BIN)/python -m grpc_resilience_mesh.launch.otel_protos
	$(BIN)/python -m compileall -q $(PACKAGES)
	@touch $(STAMP) $(DEMO_STAMP)

# The demo needs the package (its tools included), not the dev extra (test, lint, browser; ~8 s
# more to install into a fresh .venv): `make test` adds those when it first runs. Everything is
# byte-compiled at install (a few seconds): with PYTHONDONTWRITEBYTECODE=1 and no bytecode a
# service took 2.7 s from exec to SERVING, 1.0 s with it (grpc, protobuf, opentelemetry and
# pydantic are most of that), and a restarted replica's start decided replica-loss's verdict.
# Each stage says what it does and, done, how long it took (the install itself is quiet; piped,
# as under tee or CI, a line every PIPED_EVERY_S while it runs: a reader waits at most 10 s).
PIPED_EVERY_S := 5
# The [xds] extra too: the catalogue's xDS variants (fault-sources, pushback, provider-outage,
# flapping-dependency) need grpcio-csds, and otel_protos puts OTLP's files back after it.
$(DEMO_STAMP): pyproject.toml libs/grpc-aio-resilience/pyproject.toml
	@echo "demo: [install] the package into $(VENV) (uv, quiet; seconds, or 1-2 min with pip) ..."
	@start=$$SECONDS; tick=; test -x $(BIN)/python || $(PYTHON) -m venv $(VENV); \
		[ -t 1 ] || { while sleep $(PIPED_EVERY_S) >/dev/null 2>&1; do \
			echo "demo: [install] still installing ($$((SECONDS - start)) s)"; done & tick=$$!; }; \
		{ $(call INSTALL,-e ./libs/grpc-aio-resilience -e '.[xds]'); } && \
		$(BIN)/python -m grpc_resilience_mesh.launch.otel_protos && \
		$(BIN)/python -m compileall -q $(PACKAGES); \
		rc=$$?; [ -z "$$tick" ] || kill $$tick; \
		[ $$rc != 0 ] || echo "demo: [install] done in $$((SECONDS - start)) s"; exit $$rc
	@touch $(DEMO_STAMP)

venv: $(STAMP) ## Create .venv and install the package (services, CLI, tools) and its dev extra

# With a Go toolchain the demo's load comes from the Go generator (grpc_resilience_mesh/loadgen/go,
# a few seconds to build once): its CPU stays under 10% of the mesh's, the Python one's near 11%.
# The install and that build run side by side (tools.peers needs only the standard library, so
# it runs before .venv exists): on a fresh machine Go's build cache is cold and the build takes
# about as long as the install (26 s and 19 s on this project's machine), one after the other
# would add them up.
demo: ## Create .venv, install, run the whole experiment catalogue on the embedded mesh
	@$(MAKE) --no-print-directory -j2 $(DEMO_STAMP) demo-loadgen
	@echo "demo: [start] the embedded mesh, then each experiment of the catalogue ..."
	$(BIN)/mesh demo

demo-loadgen: ## Build the Go load generator alone (`make demo` runs this beside its install)
	@if [ -n "$(GO_DIR)" ]; then start=$$SECONDS; \
		echo "demo: [go build] the Go load generator, beside the install (a Go toolchain is here; once: seconds, half a minute with a cold build cache) ..."; \
		PATH="$(GO_DIR):$$PATH" $(PYTHON) -m tools.peers --only mesh-loadgen \
		&& echo "demo: [go build] done in $$((SECONDS - start)) s" \
		|| echo "demo: the Go load generator did not build; using the Python one"; \
	else echo "demo: [go build] skipped: no Go toolchain, the Python load generator runs"; fi

# The catalogue's xDS variants need mesh-xds: warm, its build took 2.6 s; with Go's build cache
# cold, 94 s (53 s of CPU) on a loaded 2-core machine (2026-12-05). The demo leaves those variants
# out when it is not built (and names them); verify builds it, and without Go fails here, since a
# skipped variant would make its experiment partial (exit 5) after the whole run.
xds-plane: ## Build mesh-xds alone into .peers/bin (the catalogue's xDS variants; needs go)
	@if [ -n "$(GO_DIR)" ]; then PATH="$(GO_DIR):$$PATH" $(PYTHON) -m tools.peers --only mesh-xds; \
	elif [ -x .peers/bin/mesh-xds ]; then echo "xds-plane: no Go toolchain; using the mesh-xds built before"; \
	else echo "xds-plane: mesh-xds needs a Go toolchain (go on PATH or /usr/local/go/bin)"; exit 1; fi

verify: $(STAMP) ## The catalogue 3 times on one mesh: fails unless every hypothesis held in all 3 (a partial fails too)
	@$(MAKE) --no-print-directory demo-loadgen  # the demo's load generator: the Go one where Go is
	@$(MAKE) --no-print-directory xds-plane  # the xDS variants': a skipped one is a partial, exit 5
	$(BIN)/mesh chaos run --all --repeat 3

# `go` on the PATH, else where Go's own installer puts it (a shell without the login profile).
GO_DIR := $(or $(patsubst %/,%,$(dir $(shell command -v go 2>/dev/null))),$(wildcard /usr/local/go/bin))

# pytest exits 5 when no test ran: a failure here too, never passed over.
# With a Go toolchain the suite first builds the Go peers (once; tests needing one skip without).
# The tests run in TEST_WORKERS pytest-xdist workers (0: in this process, one at a time): most
# of the suite waits on processes and sockets. Two workers on 2 cores kept them 1.42 cores busy
# (14 min 34 s on an idle fresh clone, 2026-12-06), so a third fills what two leave idle
# (docs/results/suite.md).
# Work stealing: a worker that runs dry takes tests queued on another, so the suite's minute-long
# end-to-end tests do not end it on one worker while the other idles (docs/results/suite.md).
TEST_WORKERS ?= 3
test: $(STAMP) $(if $(GO_DIR),peers) browser ## Create .venv if needed and run the whole suite
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist worksteal $(PYTEST_ARGS)

# The tests marked `install` (tests/e2e/test_pip_install.py, tests/integration/packaging/
# test_mesh_install.py): each distribution installed from PyPI into a clean venv, as a pip user
# gets it, then run. They reach off this machine and take minutes, so `make test` skips them
# (saying so) and .ci/run runs this after it. Exit 5 (none ran) fails it.
.PHONY: install-rehearsal
install-rehearsal: $(STAMP) $(if $(GO_DIR),peers) ## The install tests: the distributions from PyPI into clean venvs, then run
	MESH_INSTALL_REHEARSAL=1 $(BIN)/python -m pytest -m install -n $(TEST_WORKERS) --dist worksteal $(PYTEST_ARGS)

# The inner loop: no Go peers (MESH_PEERS_BIN names no folder, so the tests of a real peer
# skip even where `make peers` built them), no browser, no e2e, no compose. Exit 5 fails it too.
# The tests run in CHECK_WORKERS pytest-xdist workers (0: in this process, one at a time). Four
# on 2 cores: the unit and integration tests mostly wait (timeouts, windows, sockets), 97 s of
# CPU in 189 s with two workers, 115 s in 123 s with four (docs/results/suite.md).
CHECK_TESTS ?= tests/unit tests/integration tests/examples
CHECK_WORKERS ?= 4
check: $(STAMP) lint typecheck ## lint, typecheck, the unit and integration tests (no peers, browser, e2e)
	MESH_PEERS_BIN=$(CURDIR)/.peers/not-in-check $(BIN)/python -m pytest -n $(CHECK_WORKERS) \
		$(CHECK_TESTS) $(PYTEST_ARGS)

# The console's browser tests drive Debian's chromium (never a downloaded browser build).
.PHONY: browser
browser: $(STAMP) ## Install Debian's chromium for the browser tests (root with apt; once)
	@if [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		apt-get -o DPkg::Lock::Timeout=600 update -qq && DEBIAN_FRONTEND=noninteractive \
		apt-get -o DPkg::Lock::Timeout=600 install -y -qq chromium; \
	else echo "no /usr/bin/chromium and no root apt: the browser tests will skip"; fi

.PHONY: peers
# The Go and Maven builds and the Chaos Toolkit's venv side by side: the builds are mostly CPU,
# the venv mostly fetching and unpacking (uv). The builds' exit status is the target's; a venv
# that did not install only skips its tests.
peers: $(STAMP) ## Build real Toxiproxy, Jaeger v2, Mailpit, mesh-loadgen, mesh-xds, the limits differential, ghz into .peers/bin, Chaos Toolkit into .peers/ctk (once; needs go, mvn)
	@echo 'PATH="$(GO_DIR):$$PATH" $(BIN)/python -m tools.peers & $(BIN)/python -m tools.ctk_venv'
	@PATH="$(GO_DIR):$$PATH" $(BIN)/python -m tools.peers & built=$$!; \
		$(BIN)/python -m tools.ctk_venv || echo "Chaos Toolkit did not install: its tests will skip"; \
		wait $$built

# deploy/k8s on a real control plane (issue 31): etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler and kubectl v1.34.3 built once from the Go module proxy into .peers/bin (cold:
# about 20 minutes of 2 cores, under nice), kwok's fake nodes; tests/k8s; nothing left running.
.PHONY: k8s-rehearsal
k8s-rehearsal: $(STAMP) ## Both deploy/k8s overlays on a loopback control plane with two kwok nodes (tests/k8s)
	PATH="$(GO_DIR):$$PATH" deploy/k8s-rehearsal/rehearse.sh

# The `chaos` overlay on one real node built from parts (issue 31): the kubelet, kube-proxy and
# CoreDNS built as above, Debian's containerd and runc, the images built as the compose rehearsal
# builds them and imported; in network, mount and PID namespaces of its own; tests/k8s_node
# (provider-outage through port-forwards vs the embedded mesh). Root; not part of .ci/run.
.PHONY: k8s-real-node
k8s-real-node: $(STAMP) ## The chaos overlay on one real kubelet + containerd node (tests/k8s_node)
	PATH="$(GO_DIR):$$PATH" deploy/k8s-rehearsal/real-node.sh

up: ## docker compose stack if a Docker engine answers, else the embedded mesh
	@if docker info >/dev/null 2>&1; then $(MAKE) --no-print-directory compose-up; \
	else echo "no Docker engine here: starting the embedded mesh (make mesh-up)"; \
		$(MAKE) --no-print-directory mesh-up; fi

mesh-up: $(STAMP) ## The embedded mesh in the foreground (Ctrl-C stops it)
	$(BIN)/mesh up

protos: $(STAMP) ## Regenerate grpc_resilience_mesh/services/v1 from protos/, and the examples' stubs
	$(BIN)/python -m tools.codegen --write
	$(BIN)/python -m grpc_tools.protoc -I. --python_out=. --grpc_python_out=. --pyi_out=. \
		examples/kv/kv.proto examples/chain/chain.proto
	$(BIN)/python -m grpc_tools.protoc -I. --descriptor_set_out=examples/kv/kv.binpb examples/kv/kv.proto

# The reference pages are regenerated from the code first (a test fails when one is stale).
docs: $(STAMP) ## Regenerate docs/reference/ and build the docs site into site/ (mkdocs --strict)
	$(BIN)/python -m tools.docs_reference --write
	$(BIN)/mkdocs build --strict --site-dir site

# tools/code_shape.py: no module over 400 lines, no function over 60, but for the ones in
# tools/code_shape_allowlist.txt, which may only shrink (`python -m tools.code_shape --update`).
lint: $(STAMP) ## ruff, the import-linter contracts (pyproject.toml), no import cycle, the size ratchet
	$(BIN)/ruff check libs grpc_resilience_mesh tests tools integrations examples
	$(BIN)/ruff format --check libs grpc_resilience_mesh tests tools integrations examples
	$(BIN)/lint-imports --no-cache
	$(BIN)/python -m tools.import_cycles grpc_resilience_mesh=grpc_resilience_mesh \
		libs/grpc-aio-resilience/src/grpc_aio_resilience=grpc_aio_resilience
	$(BIN)/python -m tools.code_shape libs grpc_resilience_mesh tests tools integrations examples

typecheck: $(STAMP) ## mypy --strict on the packages, the tests and tools/
	$(BIN)/mypy

bench: $(STAMP) ## Pipeline and proxy overhead benchmarks
	$(BIN)/mesh bench overhead
	$(BIN)/mesh bench proxy

# Each says what it removes and its size (du) before removing it. `clean` keeps what took minutes
# to install or build; `clean-all` takes that too (.venv, .peers: `make demo`/`make peers` make
# them again; .rehearsal: the compose rehearsal's images and tools).
CLEAN := var reports site .pytest_cache .mypy_cache .ruff_cache .hypothesis .grimp_cache
CLEAN_ALL := $(CLEAN) .venv .peers .rehearsal
REMOVE = found=$$(for p in $(1); do if test -e $$p; then echo $$p; fi; done); \
	if test -z "$$found"; then echo "nothing to remove ($(1): none exists)"; exit 0; fi; \
	echo "removing:"; du -sh $$found | sed 's/^/  /'; \
	echo "total $$(du -sch $$found | tail -n 1 | cut -f 1)"; rm -rf $$found && echo "removed."

.PHONY: clean-all
clean: ## Remove what runs and builds write: var/, reports/, site/, the tools' caches (sizes first)
	@$(call REMOVE,$(CLEAN))

clean-all: ## `make clean`, and .venv, .peers and .rehearsal (`make demo` makes them again)
	@$(call REMOVE,$(CLEAN_ALL))

.PHONY: fuzz soak
FUZZ_EXAMPLES ?= 5000
SOAK_DURATION ?= 600

fuzz: $(STAMP) ## Fuzz every RPC with random and mutated bytes (FUZZ_EXAMPLES=5000)
	FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/python -m pytest tests/e2e/test_fuzz.py -q -s

soak: $(STAMP) ## Load + random chaos; RSS/FD growth and lost charges (SOAK_DURATION=600 s)
	@mkdir -p reports
	$(BIN)/mesh soak --duration $(SOAK_DURATION) --json reports/soak.json
