# ascendjob-controller — developer entry points. `make help` lists them.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=
# make bench: peers rounds, interleaved; each contender's fastest is kept (the host is noisy).
PEERS_ROUNDS ?= 3

.DEFAULT_GOAL := help

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*##/ {printf "  \033[36m%-20s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

$(STAMP): setup.cfg pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

.PHONY: venv
venv: $(STAMP) ## Create .venv and install the package with its dev extras (quick when nothing changed).

.PHONY: test
test: venv ## Run the whole test suite (unit, integration against the local cluster, e2e with kubectl).
	$(BIN)/pytest $(PYTEST_ARGS)

.PHONY: real-cluster-bin
real-cluster-bin: ## Build kube-apiserver, kube-controller-manager and etcd from Go modules into ~/.cache/ascendjob-controller/realcluster/bin.
	hack/realcluster/build.sh

.PHONY: test-real
test-real: venv real-cluster-bin ## Run the integration and e2e suites against a real kube-apiserver (the controller as its ServiceAccount).
	ASCENDJOB_TEST_BACKEND=real $(BIN)/pytest tests/integration tests/e2e $(PYTEST_ARGS)

.PHONY: fidelity
fidelity: venv real-cluster-bin ## Differential fidelity suite: the same requests to the local cluster and a real kube-apiserver.
	$(BIN)/python -m hack.fidelity $(FIDELITY_ARGS)

.PHONY: real-cluster
real-cluster: venv real-cluster-bin ## A real control plane + simulated kubelet in the foreground (kubectl works against it).
	PYTHON=$(BIN)/python hack/realcluster/run --port 6443 --kubeconfig $(CURDIR)/kubeconfig.real

.PHONY: lint
lint: venv ## ruff + mypy.
	$(BIN)/ruff check ascendjob_controller tests hack
	$(BIN)/ruff format --check ascendjob_controller tests hack
	$(BIN)/mypy

.PHONY: fmt
fmt: venv ## Format and auto-fix with ruff.
	$(BIN)/ruff format ascendjob_controller tests hack
	$(BIN)/ruff check --fix ascendjob_controller tests hack

.PHONY: run
run: venv ## Demo: local cluster + controller + the sample job, live status; Ctrl-C to stop.
	$(BIN)/ascendjob-controller demo --kubeconfig $(CURDIR)/kubeconfig.local

.PHONY: local-cluster
local-cluster: venv ## Only the embedded local cluster, in the foreground (kubectl works against it).
	$(BIN)/ascendjob-controller local-cluster --port 6443 --kubeconfig $(CURDIR)/kubeconfig.local

.PHONY: manifests-check
manifests-check: venv ## Render manifests/ and validate it with a server-side dry run on the local cluster.
	BIN=$(BIN) hack/manifests_check.sh

IMG ?= ascendjob-controller:0.1.0

.PHONY: docker-build
docker-build: ## Build the controller image (IMG=name:tag).
	docker build -t $(IMG) --build-arg REVISION=$$(git rev-parse --short HEAD) \
		--build-arg CREATED=$$(date -u +%Y-%m-%dT%H:%M:%SZ) .

.PHONY: deploy
deploy: ## Install CRDs, RBAC and the controller into the current kubectl context.
	kubectl apply -k manifests/

.PHONY: undeploy
undeploy: ## Remove everything `deploy` installed.
	kubectl delete -k manifests/ --ignore-not-found

.PHONY: bench-localcluster
bench-localcluster: venv ## Benchmark the embedded API server.
	$(BIN)/python hack/bench_localcluster.py

.PHONY: bench-real
bench-real: venv real-cluster-bin ## The peers comparison on a real kube-apiserver (an analysis beside `make bench`, whose bed is the local cluster).
	$(BIN)/python hack/bench_peers.py --backend real --rounds $(PEERS_ROUNDS)

.PHONY: bench
bench: bench-localcluster ## Run every benchmark (API server, controller throughput/memory/informer, peers, latency, rank table).
	$(BIN)/python hack/bench_controller.py
	$(BIN)/python hack/bench_peers.py --rounds $(PEERS_ROUNDS)
	$(BIN)/python hack/bench_latency.py
	$(BIN)/python hack/bench_ranktable.py

.PHONY: fuzz
fuzz: venv ## Fuzz: 300 mutated AscendJobs POSTed raw at the controller (FUZZ_ARGS="--seed N --count N --backend real").
	$(BIN)/python -m hack.fuzz $(FUZZ_ARGS)

.PHONY: chaos
chaos: venv ## Chaos: 500 jobs of known outcome, 2 leader-elected replicas, API faults, 10 leader SIGKILLs (CHAOS_ARGS="--seed N --jobs N --kills N --quick"; docs/chaos.md).
	$(BIN)/python -m hack.chaos $(CHAOS_ARGS)

.PHONY: chaos-real
chaos-real: venv real-cluster-bin ## The same chaos run on a real kube-apiserver, the replicas behind a fault proxy (docs/chaos.md).
	$(BIN)/python -m hack.chaos --backend real $(CHAOS_ARGS)

.PHONY: clean
clean: ## Remove the virtual environment and caches.
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache *.egg-info

.PHONY: helm-bin
helm-bin: ## Build helm (helm.sh/helm/v3, pinned in hack/helm/build.sh) from its Go module into ~/.cache/ascendjob-controller/helm/bin.
	hack/helm/build.sh

.PHONY: test-helm
test-helm: venv helm-bin ## Lint the Helm chart, compare it with manifests/, install it into the local cluster.
	ASCENDJOB_REQUIRE_HELM=1 $(BIN)/pytest tests/e2e/ship/test_helm.py $(PYTEST_ARGS)
