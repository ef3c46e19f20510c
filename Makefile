# boxes: see README.md. `make up` builds boxes and brings the boxes of
# boxes.yaml up; `make test` runs every test, unit and real-engine.
GO       ?= go
BIN      := bin/boxes
# -trimpath: what is built does not depend on where the clone is, so a
# fresh clone's build and tests reuse the Go build cache (packages and
# linked test binaries) that another clone of the same code filled.
GOFLAGS  ?= -trimpath
export GOFLAGS
# boxes puts itself into the box image as the network gate (boxes build), so
# it is built static; nothing here needs cgo.
CGO_ENABLED ?= 0
export CGO_ENABLED

.PHONY: all build up try try-clean test test-long test-short test-image kube-build kube-up kube-down lint lint-workflow bench fuzz clean render-markdown

all: build

build:
	$(GO) build -o $(BIN) ./cmd/boxes

# The real image needs the internet (Ubuntu base, npm, nodejs.org, GitHub):
# up resolves the pins boxes.lock lacks (only those), builds the image (a
# no-op when the lock's image is current), then plans and applies boxes.yaml.
# Offline, the pinning fails: network errors are kept in bin/lock-update.log
# and summed up in one line naming make try; other errors are shown as they are.
up: build
	./$(BIN) validate
	@./$(BIN) lock update --missing 2>bin/lock-update.log || { \
		grep -qiE 'dial tcp|no such host|network is unreachable|connection refused|i/o timeout|TLS handshake timeout' bin/lock-update.log || cat bin/lock-update.log >&2; \
		echo "make up: the real image needs the internet (npm, nodejs.org, GitHub, a registry) and it is not reachable (details: bin/lock-update.log); make try shows boxes offline, on the test image." >&2; \
		exit 1; }
	@cat bin/lock-update.log >&2
	./$(BIN) build
	./$(BIN) plan
	./$(BIN) apply

# Offline: the test image (stand-in Executor, no network installs) and an
# example fleet in try/ brought up on it.
try: build
	bash scripts/try.sh

# Removes the boxes make try brought up, and try/.
try-clean: build
	bash scripts/try.sh clean

test-image:
	bash scripts/test-image.sh

# lint-workflow too: CI runs only make test (.ci/run), and the workflow the
# README offers has no Go code for go test to check.
test: lint-workflow test-image
	$(GO) vet ./...
	GO=$(GO) bash scripts/test.sh

# The test cluster (scripts/kube/, docs/testing.md): one node of Kubernetes
# that make test starts and stops by itself. kube-build fills its cache once
# (10 to 20 minutes cold on two cores; then a no-op); kube-up starts it and
# prints its KUBECONFIG; kube-down stops it and removes what it made. As root.
kube-build:
	bash scripts/kube/build.sh

kube-up: kube-build
	bash scripts/kube/up.sh

kube-down:
	bash scripts/kube/down.sh

# The longer trials: 50 random kills of apply, 15 of each of load, a seeding apply and a move,
# 50 of each of lease, renew and release, and 50 of each of a snapshot and a fork's apply;
# then 15 kills of apply on the test cluster, started for them.
test-long: test-image
	BOXES_KILL_TRIALS=50 BOXES_RESTORE_KILL_TRIALS=15 $(GO) test -count=1 -timeout 120m -run 'TestIntegrationRandomKills|TestIntegrationPoolKills|TestIntegrationForkKills' -v ./cmd/boxes/cli/
	bash scripts/test-long-kube.sh

test-short:
	$(GO) test -short ./...

lint: lint-workflow
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
	shellcheck $$(git ls-files '*.sh') $$(git ls-files 'guest/hb' .ci/run scripts/kube/kube-router-bin/iptables-restore scripts/kube/kube-router-bin/iptables)

# docs/pr-workflow.yml, the workflow the README offers for pull requests:
# actionlint at a fixed version (which runs shellcheck on each run: script when
# shellcheck is on PATH), then the commands and the marker the README says it has.
WORKFLOW   := docs/pr-workflow.yml
ACTIONLINT := github.com/rhysd/actionlint/cmd/actionlint@v1.7.12

lint-workflow:
	@command -v shellcheck >/dev/null || echo "lint-workflow: shellcheck is not on PATH: actionlint checks $(WORKFLOW) without it"
	$(GO) run $(ACTIONLINT) -no-color $(WORKFLOW)
	@for want in 'boxes -f "$$BOXES_FILE" validate' 'diff --markdown "origin/$${BASE_REF}"' '<!-- boxes-diff -->' 'fetch-depth: 0'; do \
		grep -qF -- "$$want" $(WORKFLOW) || { echo "$(WORKFLOW) does not contain: $$want" >&2; exit 1; }; \
	done

# Every benchmark once, one package at a time, gathered into one table (figure,
# baseline measured in the same run, ratio) under a line naming the machine:
# printed and written to bin/bench.md. BENCH=Pattern runs only some.
bench: test-image
	GO=$(GO) bash scripts/bench.sh

# Each fuzz target for FUZZTIME (seed corpora in each package's testdata/fuzz);
# a finding is written there as a new failing seed. FUZZTIME may be a count,
# FUZZTIME=100000x: go's progress line counts a worker's inputs only when the
# worker reports, which a target that seldom finds new coverage (FuzzRead)
# does rarely, so for it a timed run's last line can show a few execs where
# the worker ran tens of thousands; a counted run ends at the exact count.
FUZZTIME ?= 1m
FUZZ_TARGETS := ./spec:FuzzParse ./spec:FuzzDestination ./spec:FuzzParseLock ./reconcile:FuzzRender ./archive:FuzzWalk ./archive:FuzzRead ./archive:FuzzTrailer

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$name ($$pkg) for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 10s $$pkg; \
	done

# A sample plan's --markdown rendered as a pull-request comment and
# photographed: bin/markdown/plan.png. Needs headless Chromium (Debian:
# apt-get install chromium); no engine.
render-markdown:
	bash scripts/render-markdown.sh

clean:
	rm -rf bin
