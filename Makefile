# sandboxd build entry points. `make up` runs the product locally; `make test` passes every test.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

JDK ?= $(firstword $(wildcard /usr/lib/jvm/temurin-2[1-9]-jdk-amd64 /usr/lib/jvm/temurin-*-jdk-amd64))
export JAVA_HOME := $(if $(JDK),$(JDK),$(JAVA_HOME))
export PATH := $(JAVA_HOME)/bin:$(PATH)
export SANDBOXD_CACHE ?= /var/cache/sandboxd
CLUSTER := tests-e2e/cluster
KUBECONFIG_LOCAL := /var/lib/sandboxd-cluster/admin.kubeconfig
MVN := mvn -B -ntp -Dstyle.color=never
export RELEASE_DIR ?= dist/release
export PUBLISHED_VALUES ?= dist/published-values.yaml
# The harness's registry (tests-e2e/cluster/cluster.env): `make test` publishes the release there and installs from it.
LOCAL_REGISTRY := localhost:5000
# Nodes of the cluster `make test` brings up: two, so that every isolation test has attackers and targets on both
# nodes and the fault pass loses one (`make up` keeps one: CLUSTER_NODES). TEST_NODES=1 runs the suite on one.
TEST_NODES ?= 2
# Extra Maven flags for `make e2e`, e.g. -De2e.chart=... -De2e.imageValues=... to install from a published release.
E2E_FLAGS ?=
# The egress proxy is tested and vetted as its image builds it (tests-e2e/images/build-images.sh): static, paths
# trimmed. So the tests run the shipped configuration, and the image's build finds every compile in the Go cache.
EGRESS_PROXY_GO := CGO_ENABLED=0 GOFLAGS=-trimpath

.PHONY: help build format verify lint docs unit-test unit-test-jvm unit-test-python adk-test packages cluster-bins images release verify-release publish cluster-up cluster-down cluster-status up reload down e2e test bench

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

build: ## compile the service (jar + libs) without running tests
	$(MVN) -pl service -am -DskipTests package

format: ## fix what the formatter check reports (spotless:apply on every Java module)
	$(MVN) spotless:apply

verify: ## the fast lane, no cluster: commit subjects, generated docs fresh, the Python linters, the formatter check and every unit test
	bash .ci/commit-subjects.sh
	bash charts/helm-docs.sh --check
	$(MAKE) --no-print-directory lint
	$(MAKE) --no-print-directory unit-test

lint: ## ruff and mypy on toolrunner/ (their venv: /var/cache/sandboxd/lint-venv, made once); gofmt and go vet on egress-proxy/
	lint_python=$$(bash toolrunner/lint-venv.sh) && cd toolrunner && "$$lint_python" -m ruff check . && "$$lint_python" -m mypy
	test -z "$$(gofmt -l egress-proxy)" || { gofmt -l egress-proxy; echo "egress-proxy: run gofmt -w egress-proxy"; exit 1; }
	cd egress-proxy && $(EGRESS_PROXY_GO) go vet ./...

docs: ## regenerate the chart README's values reference (helm-docs, built once from the Go module proxy) and values.schema.json's descriptions from values.yaml
	bash charts/helm-docs.sh

# The JVM and Go lane beside the Python lane, one core each; each lane's output is printed whole when it ends.
unit-test: ## unit tests: service, policies + chart, egress proxy, toolrunner (on CPython 3.11 to 3.14), toolrunner with Google ADK; the formatter check on every Java module
	$(MAKE) --no-print-directory -j2 --output-sync=target unit-test-jvm unit-test-python
unit-test-jvm: ## unit tests of the service, the policies and chart, the egress proxy; the formatter check on every Java module
	$(MVN) -pl service,policies -am install
	cd egress-proxy && mkdir -p target && $(EGRESS_PROXY_GO) go test ./... 2>&1 | tee target/go-test.log  # the log: for .ci/failures.py
	$(MVN) -pl tests-e2e validate  # the formatter check (spotless:check at validate) for the e2e suite's Java too
unit-test-python: ## unit tests of the in-pod programs: toolrunner on CPython 3.11 to 3.14, toolrunner with Google ADK
	cd toolrunner && python3 -m pytest -q --junitxml=target/pytest.xml
	bash toolrunner/python-versions.sh  # the tool runner's tests on CPython 3.12, 3.13 and 3.14 too
	$(MAKE) --no-print-directory adk-test

adk-test: ## tool relocation with a real Google ADK agent (its venv: /var/cache/sandboxd/adk-venv, made once)
	adk_python=$$(bash toolrunner/adk-venv.sh) && cd toolrunner/tests_adk && "$$adk_python" -m pytest -q --junitxml=../target/pytest-adk.xml

packages: ## install the Debian packages the cluster needs (idempotent)
	bash $(CLUSTER)/install-packages.sh

cluster-bins: packages ## build Kubernetes, kube-router, CoreDNS and helm from the Go module proxy (cached)
	bash $(CLUSTER)/build-k8s.sh

images: cluster-bins build ## build every image without Docker (umoci/skopeo), into $(SANDBOXD_CACHE)/images
	bash tests-e2e/images/build-images.sh

release: images ## release artifacts in $$RELEASE_DIR (dist/release): image archives + digests, signed chart, SBOMs, SHA256SUMS
	bash release/make-release.sh

publish: ## push the release's images to $$REGISTRY (digests kept, checked) and write the chart values naming them
	bash release/publish.sh

verify-release: ## verify a release: checksums, signatures of SHA256SUMS, images and chart, digests in the chart
	bash release/verify-release.sh

cluster-up: images ## bring the local cluster up, CLUSTER_NODES=1 (default) or 2 (returns when every node is Ready and DNS answers)
	bash $(CLUSTER)/cluster-up.sh

cluster-down: ## stop exactly what cluster-up started and clean up
	bash $(CLUSTER)/cluster-down.sh

cluster-status: ## show the cluster's processes and node
	bash $(CLUSTER)/cluster-status.sh

up: cluster-up ## run it: cluster, images, chart installed, one sample call printed
	bash tests-e2e/scripts/install-and-call.sh

reload: images ## rebuild the images and restart sandboxd and its pool from them on the running cluster
	bash tests-e2e/scripts/reload-images.sh

down: cluster-down ## stop everything `make up` started

e2e: ## the end-to-end suite against $$KUBECONFIG (or the local cluster); E2E_KEEP_REPORTS=1 keeps an earlier run's reports
	[ -n "$(E2E_KEEP_REPORTS)" ] || rm -rf tests-e2e/target/failsafe-reports*  # a skipped pass must not leave an old summary to verify
	KUBECONFIG=$${KUBECONFIG:-$(KUBECONFIG_LOCAL)} $(MVN) -pl tests-e2e -am -Pe2e -DskipUnitTests=true $(E2E_FLAGS) verify

# The isolation tests' second pass runs on a second cluster: dual-stack, with Calico for enforcer (ENFORCER in
# tests-e2e/cluster/cluster.env), so every claim is attacked on two enforcers and IPv6's on a dual-stack cluster.
TEST_SECOND_CLUSTER := IP_FAMILIES=dual ENFORCER=calico
# One e2e run on a fresh cluster: cluster up, the release published to its registry, the suite installing from there
# with the given pass flags, the cluster down (whatever the suite's outcome).
define e2e_on_cluster
	status=0; { CLUSTER_NODES=$(TEST_NODES) $(1) bash $(CLUSTER)/cluster-up.sh && $(MAKE) publish REGISTRY=$(LOCAL_REGISTRY) REGISTRY_TLS_VERIFY=false \
	  && $(MAKE) e2e E2E_KEEP_REPORTS=$(3) E2E_FLAGS="-De2e.chart=$$(realpath $(RELEASE_DIR)/sandboxd-*.tgz) -De2e.imageValues=$$(realpath $(PUBLISHED_VALUES)) $(2)"; } \
	  || status=$$?; $(MAKE) cluster-down; exit $$status
endef

# The fast lane beside the cluster's builds (Go, CPU-bound on a cold cache; cached, they take seconds), each target's
# output printed whole when it ends.
test: packages ## every test: unit tests, the release and its verification, then on a cluster of TEST_NODES nodes the e2e suite's runc and fault passes, then on a dual-stack cluster with Calico its gVisor pass
	$(MAKE) --no-print-directory -j2 --output-sync=target verify cluster-bins
	$(MAKE) release verify-release
	$(call e2e_on_cluster,,-De2e.gvisor.skip=true,)
	$(call e2e_on_cluster,$(TEST_SECOND_CLUSTER),-De2e.runc.skip=true -De2e.faults.skip=true,1)

bench: ## warm-pool benchmark against the local cluster: p50/p99 at concurrency 1 and 4 vs a cold pod-per-call baseline
	rm -rf tests-e2e/target/failsafe-reports*
	KUBECONFIG=$${KUBECONFIG:-$(KUBECONFIG_LOCAL)} $(MVN) -pl tests-e2e -am -Pbench -DskipUnitTests=true verify
