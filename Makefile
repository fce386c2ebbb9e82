# The commands a fresh machine needs: `make run`, `make test` and `make demo`.
GO ?= go
CONFIG ?= $(if $(wildcard forge.yml),forge.yml,)
PKGS := ./...

# What `forge version` says: a build of a tag vX.Y.Z is that version; any
# other build is the newest version of CHANGELOG.md with -dev (tag a
# release's commit before `make release`).
VERSION ?= $(or $(shell git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null),$(shell sed -n 's/^## \[\([0-9][^]]*\)\].*/v\1-dev/p' CHANGELOG.md | head -n 1))
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
BUILD_DATE ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
BUILDINFO := github.com/forge-dev/forge/internal/buildinfo
# Static: the SQLite driver (modernc.org/sqlite) and pgx are pure Go, so
# without cgo the binary needs no libc and runs on any Linux of its arch.
# -buildvcs=auto records the commit and a dirty tree where git is there.
BUILD_FLAGS = -trimpath -buildvcs=auto -ldflags '-s -w -X $(BUILDINFO).Version=$(VERSION) -X $(BUILDINFO).Commit=$(COMMIT) -X $(BUILDINFO).Date=$(BUILD_DATE)'
BIN ?= bin/forge
RELEASE_PLATFORMS := linux/amd64 linux/arm64

.PHONY: run build release image test test-layouts test-deploy test-chart lint bench bench-smoke tidy demo demo-screenshots

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
	CGO_ENABLED=0 $(GO) build $(BUILD_FLAGS) -o $(BIN) ./cmd/forge

# dist/: forge-VERSION-linux-ARCH for each of RELEASE_PLATFORMS, static,
# and SHA256SUMS over them (check with `sha256sum -c SHA256SUMS`).
release:
	mkdir -p dist && rm -f dist/forge-* dist/SHA256SUMS
	set -e; for p in $(RELEASE_PLATFORMS); do \
	  CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build $(BUILD_FLAGS) \
	    -o dist/forge-$(VERSION)-$${p%/*}-$${p#*/} ./cmd/forge; \
	done
	cd dist && sha256sum forge-* > SHA256SUMS
	@cat dist/SHA256SUMS

# $(IMAGE_OUT): the container image as an OCI layout (oci/) and a tarball
# `docker load` and `podman load` take (forge.tar), built without a Docker
# engine: debootstrap makes a minimal Debian with git, bubblewrap and
# ca-certificates from Debian's packages (as root, a few minutes; IMAGE_ROOTFS
# reuses one), and the static binary of `make build` goes on top.
IMAGE_OUT ?= dist/image
IMAGE_ROOTFS ?=
image: build
	$(GO) run ./deploy/internal/buildimage -binary $(BIN) -out $(IMAGE_OUT) -version $(VERSION) -revision $(COMMIT) $(if $(IMAGE_ROOTFS),-rootfs $(IMAGE_ROOTFS),)

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

# deploy/'s image without a Docker engine: its binary built by the
# Dockerfile's own command is static and serves with the image's
# configuration, and the image `make image` builds (debootstrap, as root:
# minutes, so not in make test) runs its entrypoint and forge doctor.
test-deploy:
	$(GO) test -tags deploy -count=1 -timeout 30m ./deploy/

# The Helm chart (deploy/helm/forge) rendered by Helm's Go library for
# several value sets, each object decoded strictly into Kubernetes' API
# types: a module of its own, so Forge's go.mod does not carry Helm.
test-chart:
	cd deploy/helm && $(GO) vet ./... && $(GO) test -count=1 ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) vet -tags deploy ./deploy/

# Benchmarks are not tests: long, and their figures need a quiet machine.
# `make test` runs none of them (no -bench). Each checks its own work and
# fails, reporting nothing, when a delivery was refused or replayed, a plan
# did not finish or a working copy differs. BenchmarkIngest runs fixed
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

# Every benchmark of every package that has one, once at a smoke test's size
# (-short: phases of a second, two forges, a 600-file repository), so that a
# benchmark a change broke fails CI that day; its figures mean nothing. About
# 40 s on this 2-core machine once the test binaries are built.
BENCH_PKGS = $(sort $(dir $(shell grep -rl --include='*_test.go' --exclude-dir=node_modules --exclude-dir=.git '^func Benchmark' .)))
bench-smoke:
	$(GO) test -short -run '^$$' -bench . -benchtime 1x -timeout 10m $(BENCH_PKGS)
