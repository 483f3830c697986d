SHELL     := /bin/bash
GO        ?= go
BIN       ?= servingprobe
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
BRANCH    ?= $(shell git rev-parse --abbrev-ref HEAD 2>/dev/null || echo unknown)
STATICCHECK_VERSION ?= v0.7.0
# The build date is the last commit's (UTC), not the clock's: a date that
# changes on every call changes the linker's flags, so every `make build`
# relinked the binary (30 s on a loaded two-core machine) although no
# package had changed; with the commit's date a second `make build` finds
# ./servingprobe up to date and does nothing. The packages themselves are
# compiled once per flag set either way (-ldflags -X reaches only the
# link): the first `make build` compiles every package again, as
# CGO_ENABLED=0 and -trimpath key the build cache apart from `go run`'s.
BUILD_DATE ?= $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y%m%d-%H:%M:%S 2>/dev/null || date -u +%Y%m%d-%H:%M:%S)
LDFLAGS   := -s -w \
	-X github.com/prometheus/common/version.Version=$(VERSION) \
	-X github.com/prometheus/common/version.Revision=$(REVISION) \
	-X github.com/prometheus/common/version.Branch=$(BRANCH) \
	-X github.com/prometheus/common/version.BuildUser=servingprobe \
	-X github.com/prometheus/common/version.BuildDate=$(BUILD_DATE)

.PHONY: all build run test deps lint fmt vet staticcheck docker check-deploy check-image
.PHONY: alerts alerts-native

all: lint build test

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/servingprobe

# The README's quick-start command.
run:
	$(GO) run ./cmd/servingprobe serve --demo

# Meta's Llama 3 tokenizer, which the tokenizer and datasets tests check
# against: fetched by install-deps.sh (pinned by sha256), never committed.
LLAMA3_TOKENIZER ?= $(CURDIR)/.build/llama3-tokenizer

deps:
	LLAMA3_TOKENIZER=$(LLAMA3_TOKENIZER) ./scripts/install-deps.sh

# llm-d-inference-sim, the third-party vLLM simulator some tests run against.
# Built once here (2-4 minutes) so that test packages running in parallel do
# not each build it; without it those tests skip (testkit/external). The
# target is relative, so `make .build/llm-d-inference-sim` names it; the
# tests get its absolute path.
LLMD_SIM ?= .build/llm-d-inference-sim
$(LLMD_SIM): tools/llmdsim/go.mod tools/llmdsim/go.sum
	CGO_ENABLED=0 $(GO) build -C tools/llmdsim -o $(abspath $(LLMD_SIM)) github.com/llm-d/llm-d-inference-sim/cmd/llm-d-inference-sim

# ollama, a real CPU engine some end-to-end tests run against, with a tiny
# random-weight model on the real Qwen3 tokenizer: built by
# tools/ollama/setup.sh from the Go module proxy (about 8 minutes cold, a
# few seconds when .build/ollama is already there).
OLLAMA_DIR ?= .build/ollama
$(OLLAMA_DIR)/.ready: tools/ollama/setup.sh tools/ollama/gguf_writer.go tools/ollama/Modelfile.qwen3
	./tools/ollama/setup.sh $(abspath $(OLLAMA_DIR))
	touch $@

# The README's test command; .ci/run calls exactly this.
# The test run goes through tools/testreport, which prints every
# package's verdict, failures in full, each skipped test with its reason
# and a closing count: a skipped check must never pass unseen. A test that
# skips because something this target installs or builds is missing (the
# skip says "needs-external:") fails the run: SERVINGPROBE_REQUIRE_EXTERNAL.
test: deps lint $(LLMD_SIM) $(OLLAMA_DIR)/.ready
	set -o pipefail; SERVINGPROBE_LLMD_SIM=$(abspath $(LLMD_SIM)) SERVINGPROBE_OLLAMA=$(abspath $(OLLAMA_DIR)) SERVINGPROBE_LLAMA3_TOKENIZER=$(LLAMA3_TOKENIZER) CGO_ENABLED=1 $(GO) test -race -count=1 -timeout 25m -json ./... | SERVINGPROBE_REQUIRE_EXTERNAL=1 $(GO) run ./tools/testreport
	# The SLO search against ollama, a target's scheduled capacity check and
	# the run-level comparison of one ollama slot against four are timing
	# measurements of a real engine: they build only with -tags capacity and
	# run here, after the main run, with the machine's cores to itself
	# (testkit/e2e/slo_capacity_test.go, capacity_check_ollama_test.go,
	# compare_ollama_test.go); no -race, which would take the engine's CPU.
	set -o pipefail; SERVINGPROBE_OLLAMA=$(abspath $(OLLAMA_DIR)) $(GO) test -tags capacity -count=1 -timeout 25m -json -run 'TestSLOSearchOllamaCapacity|TestCapacityCheckOllama|TestCompareOllamaRuns' ./testkit/e2e | SERVINGPROBE_REQUIRE_EXTERNAL=1 $(GO) run ./tools/testreport
	# Allocation counts mean nothing under -race (sync.Pool drops items), so the
	# zero-allocation tests run once more without it.
	$(GO) test -count=1 -run 'Alloc' ./prober ./simulator
	# The checks of a whole table or corpus run a sample under -race (their
	# raceEnabled const: one goroutine's loop gives the detector nothing to
	# find, at ten times the cost), so they run whole here, without it.
	set -o pipefail; SERVINGPROBE_LLAMA3_TOKENIZER=$(LLAMA3_TOKENIZER) $(GO) test -count=1 -json -run '^(TestWordCache|TestQwen3Tables|TestLoadForms|TestRandomIDsExactByConstruction|TestParquetStrings|TestImageURIBytesBound|TestStreamMatchesGenerate)$$' ./tokenizer ./datasets | SERVINGPROBE_REQUIRE_EXTERNAL=1 $(GO) run ./tools/testreport
	$(GO) run ./cmd/servingprobe selftest --quick
	./scripts/check-deploy.sh
	./scripts/check-image.sh

IMAGE ?= servingprobe:dev
docker:
	./scripts/docker-build.sh $(IMAGE)

check-deploy:
	./scripts/check-deploy.sh

check-image:
	./scripts/check-image.sh

lint: fmt vet staticcheck

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...
	CGO_ENABLED=1 $(GO) vet -tags hftokenizers ./...
	$(GO) vet -tags capacity ./testkit/e2e

staticcheck:
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

# bench runs servingprobe's own benchmark (BENCHMARKS.md): capacity, timing
# fidelity, memory per stream and arrival accuracy, in a few minutes. Pass
# SELFTEST_FLAGS=--quick for the < 1 minute harness check.
.PHONY: bench
bench:
	go build -o .build/servingprobe-selftest ./cmd/servingprobe
	./.build/servingprobe-selftest selftest $(SELFTEST_FLAGS)

# Measure the alerting rules: time to fire per scenario and false alerts per week,
# through promtool (docs/runbook.md#measured-alert-quality). Long: some 25
# CPU-minutes, a line on stderr per finished run; -only healthy|scenarios halves it.
# Paste the table into docs/runbook.md and dashboards/README.md.
alerts:
	go run ./dashboards/internal/alertharness

# The same rules over native histograms only (Prometheus 3 with
# scrape_native_histograms), the four scenarios that must page or warn
# fastest, one seed. Debian's promtool 2.42 cannot read native input
# series, so this builds promtool 3 (Go module v0.316.0) into .build
# first: minutes of compiling the first time, cached after.
alerts-native:
	GOBIN=$(CURDIR)/.build $(GO) install github.com/prometheus/prometheus/cmd/promtool@v0.316.0
	go run ./dashboards/internal/alertharness -native -only scenarios -scenario-seeds 1 \
		-scenario '^TTFT ×2$$|^TTFT ×10|^20% of probes fail$$|^100% of probes fail$$' -promtool .build/promtool
