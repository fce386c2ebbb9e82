# The commands a fresh machine needs: `make run`, `make test` and `make demo`.
GO ?= go
CONFIG ?= $(if $(wildcard forge.yml),forge.yml,)
PKGS := ./...

.PHONY: run build test test-layouts test-deploy lint bench tidy demo demo-screenshots

run:
	$(GO) run ./cmd/forge serve $(if $(CONFIG),--config $(CONFIG),)

# The playground: Forge on a stand-in for GitHub with a sample repository,
# its CI and scripted agents; no credentials, no network. DEMO_FLAGS passes
# `forge demo`'s flags: --addr HOST:PORT, --agents NAME --config FILE.
demo:
	$(GO) run ./cmd/forge demo $(DEMO_FLAGS)

# Screenshots of the pages for the README, in $(SCREENSHOTS): the browser
# tests of SCREENSHOT_PKGS whose names match SCREENSHOT_RUN save theirs
# where FORGE_SCREENSHOTS says. A package with more joins the list.
SCREENSHOTS := $(CURDIR)/docs/screenshots
SCREENSHOT_PKGS := ./internal/demo/ ./app/
SCREENSHOT_RUN := ^TestPlaygroundInABrowser$$|^TestDashboardInBrowser$$
demo-screenshots:
	FORGE_SCREENSHOTS=$(SCREENSHOTS) $(GO) test -count=1 -run '$(SCREENSHOT_RUN)' $(SCREENSHOT_PKGS)

build:
	$(GO) build -o bin/forge ./cmd/forge

# .ci/test runs go test -race, the app package's end-to-end tests in four
# shards at once beside the other packages.
test: lint
	GO=$(GO) bash .ci/test $(PKGS)

# The end-to-end tests (package app) run against the GitHub double in the
# layout FORGE_TEST_GITHUB_LAYOUT names (enterprise, dotcom); unset, as in
# `make test`, each test gets one by a hash of its name, and flip gives each
# the other: `make test` then `make test-layouts` runs each in both (CI).
# Without -race: `make test` looked for races in the same tests, and this run
# is about the layout's paths; the race detector took most of its CPU time.
test-layouts:
	FORGE_TEST_GITHUB_LAYOUT=flip GO=$(GO) TEST_RACE=0 TEST_TIMEOUT=30m bash .ci/test ./app/

# deploy/'s image, as far as it can be checked without a Docker engine: its
# binary built by the Dockerfile's own command (a cold build takes minutes,
# so not in make test) is static and serves with the image's configuration.
test-deploy:
	$(GO) test -tags deploy -count=1 -timeout 15m ./deploy/

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) vet -tags deploy ./deploy/

# Benchmarks are not tests: long, and their figures need a quiet machine.
# `make test` runs none of them (no -bench). BenchmarkIngest runs fixed
# phases (~2 min) whatever b.N is; the store's benchmarks scale with b.N, and
# the paced one sends b.N deliveries at 500/s. BenchmarkLoad runs
# FORGE_LOAD_PLANS (100) forges to DONE on SQLite and on PostgreSQL with 1
# and 3 replicas (PostgreSQL from FORGE_TEST_POSTGRES_URL, skipped without);
# BenchmarkSoak takes a forge every FORGE_SOAK_EVERY (10s, below what this
# 2-core machine works: about one every 6s) for FORGE_SOAK (10m).
bench:
	$(GO) test -run '^$$' -bench '^BenchmarkIngest$$' -benchtime 1x -timeout 30m ./app/
	$(GO) test -run '^$$' -bench '^BenchmarkAccept$$' -benchtime 3s -timeout 10m ./app/store/
	$(GO) test -run '^$$' -bench '^BenchmarkAcceptPaced$$' -benchtime 2000x -timeout 10m ./app/store/
	$(GO) test -run '^$$' -bench '^BenchmarkWorkingCopyVsGit$$' -benchtime 1x -timeout 30m ./gitops/
	$(GO) test -run '^$$' -bench '^BenchmarkReadFileManyPacks$$' -benchtime 200x ./gitops/
	$(GO) test -run '^$$' -bench '^BenchmarkLoad$$' -benchtime 1x -timeout 90m ./app/
	$(GO) test -run '^$$' -bench '^BenchmarkSoak$$' -benchtime 1x -timeout 30m ./app/
