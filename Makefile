# sluice: every target fans out over the modules named in go.work.
SHELL := /bin/bash
GO ?= go
MODULES := $(shell $(GO) list -m -f '{{.Dir}}' | sed "s|^$(CURDIR)/||" | sort)
BENCHTIME ?= 1s
BENCHCOUNT ?= 6

.PHONY: all deps test conformance conformance-bridge bench bench-reload bench-scale bench-plugin bench-compare bench-hostile lint tidy demo modules check-work stress fuzz

all: lint test

modules:
	@printf '%s\n' $(MODULES)

## deps: install the programs the tests run for real (etcd, ...) when they
## are missing; quiet and fast when they are present.
deps:
	@bash scripts/deps.sh

## test: every module's tests, with the race detector, then the
## conformance summary. Installs the test dependencies first (deps).
test: deps check-work
	@set -e; for m in $(MODULES); do \
		echo "== go test -race $$m"; \
		(cd $$m && $(GO) test -race -count=1 -timeout 20m ./...); \
	done
	@$(MAKE) --no-print-directory conformance

## conformance: the conformance suites against every built-in limiter,
## endpoint policy and codec and the example third-party limiter,
## in-process and through the plugin bridge, one line per run.
conformance:
	@bash scripts/conformance.sh

## conformance-bridge: make conformance, and the limiter self-test's broken
## limiters each through the plugin bridge (about 13 more minutes).
conformance-bridge:
	@SLUICE_CONFORMANCE_BRIDGE=1 bash scripts/conformance.sh

## bench: every module's benchmarks, with allocation counts.
bench:
	@set -e; for m in $(MODULES); do \
		echo "== go test -bench $$m"; \
		(cd $$m && $(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -count $(BENCHCOUNT) ./...); \
	done

## bench-reload: the reload experiment: admissions above the no-free-burst
## bound in the first second after a live limit change, per system.
bench-reload:
	cd bench && $(GO) run ./reload

## bench-compare: sluice against grpc-go over TCP loopback, in one run: the
## unary echo uncompressed and compressed, and a capacity-refused compressed
## flood (CPU per refused call); tables and one RATIO line per case (see
## bench/compare).
bench-compare:
	cd bench && $(GO) run ./compare

## bench-hostile: honest compressed calls/s against a default server,
## alone and while 8 connections send gzip bombs that pass every check
## before decoding, and their RATIO (target >= 0.8; exits 1 below it).
bench-hostile:
	cd bench && $(GO) run ./hostile

## bench-scale: the partition namespace's curves from 1 to 1,000,000 keys
## (issue 37): a new key, a refused key, Stats, a publication that keeps
## the rule, memory per key, and distinct keys at 1 and 2 cores.
SCALE_KEYS ?= 1,100,10000,100000,1000000
bench-scale:
	cd kernel && SLUICE_SCALE_KEYS=$(SCALE_KEYS) $(GO) test -run '^$$' -timeout 60m -benchtime 20000x \
		-bench 'BenchmarkPartition(NewKey|RefusedKey|MemoryPerKey)|BenchmarkStats|BenchmarkPublishUnrelated' .
	cd kernel && SLUICE_SCALE_KEYS=$(SCALE_KEYS) $(GO) test -run '^$$' -timeout 60m -benchtime 2000000x -cpu 1,2 \
		-bench 'BenchmarkPartitionDistinctKeysParallel' .

## bench-plugin: BenchmarkPluginBridge in ROUNDS runs (default 10), and the
## median per-run ratio of the bridge to a raw go-plugin round trip.
bench-plugin:
	@bash scripts/bench-plugin.sh

## fuzz: every fuzz target for FUZZTIME (default 10m) each; FUZZ=regexp
## keeps the targets whose name matches (scripts/fuzz.sh).
fuzz:
	@bash scripts/fuzz.sh

## stress: the kernel's storms at full length, with the race detector:
## TestStressKindSwapsAtEveryScope makes STRESS_GRANTS grants (default
## 4,000,000; make test runs 60,000) and prints its figures;
## TestStressHistoriesAreLinearizable records at most 400,000 of them and
## checks the history with porcupine; then TestEveryScheduleKeepsTheLimit
## runs every order of its scenarios' turns (no preemption bound).
STRESS_GRANTS ?= 4000000
stress:
	set -o pipefail; cd kernel && SLUICE_STRESS_GRANTS=$(STRESS_GRANTS) $(GO) test -race -count=1 -timeout 90m -run '^TestStress' -v . | grep -E '^(=== RUN|--- |ok|FAIL|PASS)|grants|holders|porcupine'
	set -o pipefail; cd kernel && SLUICE_EXPLORE_PREEMPTIONS=-1 $(GO) test -count=1 -timeout 90m -run '^TestEveryScheduleKeepsTheLimit$$' -v . | grep -E '^(--- |ok|FAIL|PASS)|executions'

## lint: gofmt and go vet over every module, and go.work/replace consistency.
lint: check-work
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@set -e; for m in $(MODULES); do (cd $$m && $(GO) vet ./...); done

## tidy: go mod tidy in every module.
tidy:
	@set -e; for m in $(MODULES); do (cd $$m && $(GO) mod tidy); done

## check-work: every directory with a go.mod is in go.work, and every sibling
## requirement has a relative replace directive.
check-work:
	@bash scripts/check-work.sh

demo:
	$(GO) run ./cmd/sluice demo
