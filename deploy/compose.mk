# The mesh under Docker Compose (docker-compose.yml, .env). Included from the Makefile; also
# runs alone: make -f deploy/compose.mk compose-up. Needs Docker with Compose v2.17 or newer.
COMPOSE ?= docker compose
# `up`'s flags: build the mesh image; the rehearsal, whose images are built beforehand, says
# --pull never instead.
COMPOSE_UP_FLAGS ?= --build
COMPOSE_ENV ?= .env
BIN ?= .venv/bin

# Ports come from .env, as Compose reads them; a variable set in the shell wins, as in Compose.
env_value = $(shell sed -n 's/^$(1)=//p' $(COMPOSE_ENV))
comma := ,
GATEWAY_PORT ?= $(call env_value,GATEWAY_PORT)
TOXIPROXY_API_PORT ?= $(call env_value,TOXIPROXY_API_PORT)
JAEGER_UI_PORT ?= $(call env_value,JAEGER_UI_PORT)
MESH_API_KEY ?= $(firstword $(subst $(comma), ,$(call env_value,MESH_API_KEYS)))
JAEGER_URL = http://localhost:$(JAEGER_UI_PORT)
# The same runner as against the embedded mesh; only the addresses differ. CHAOS_TARGET_EXTRA
# adds admin.SERVICE=HOST:PORT and metrics.SERVICE=URL entries where something can reach them
# (the rehearsal does); CHAOS_ARGS passes more options to `mesh chaos run` (--json PATH, ...).
CHAOS_TARGET = toxiproxy=http://127.0.0.1:$(TOXIPROXY_API_PORT),gateway=127.0.0.1:$(GATEWAY_PORT)$(if $(MESH_API_KEY),$(comma)api_key=$(MESH_API_KEY))$(if $(CHAOS_TARGET_EXTRA),$(comma)$(CHAOS_TARGET_EXTRA))

.PHONY: compose-up down chaos traces compose-rehearsal

# The Makefile's `venv` rule installs .venv; run alone, this file expects .venv to exist.
venv:

compose-up: ## Build the image, start the compose stack, wait until it is healthy
	@$(COMPOSE) up --detach $(COMPOSE_UP_FLAGS) --wait --wait-timeout 180 || { status=$$?; \
		$(COMPOSE) ps --all; $(COMPOSE) logs --tail 30; $(COMPOSE) down --remove-orphans; \
		exit $$status; }
	@echo "gateway   127.0.0.1:$(GATEWAY_PORT)"
	@echo "toxiproxy http://127.0.0.1:$(TOXIPROXY_API_PORT)"
	@echo "jaeger    $(JAEGER_URL)"

down: ## Stop the compose stack and remove its containers and ledger volume
	$(COMPOSE) down --volumes --remove-orphans

chaos: venv ## Run experiment EXP against the compose stack, e.g. make chaos EXP=provider-outage
	@test -n "$(EXP)" || { echo "usage: make chaos EXP=<name> (one of grpc_resilience_mesh/chaos/experiments/)" >&2; \
		exit 2; }
	$(BIN)/mesh chaos run $(EXP) --target $(CHAOS_TARGET)$(if $(CHAOS_ARGS), $(CHAOS_ARGS))

traces: ## Print the Jaeger UI URL (and a search for degraded gateway requests)
	@echo "$(JAEGER_URL)"
	@echo "$(JAEGER_URL)/search?service=gateway&tags=%7B%22mesh.degraded%22%3A%22true%22%7D"

# No Docker engine needed: podman (installed with apt-get when missing, as root) serves
# Docker's API, and Docker Compose v2 itself drives docker-compose.yml through it.
compose-rehearsal: venv ## Up the compose stack under podman, test it (tests/compose), tear it down
	deploy/rehearsal/rehearse.sh
