# logscan: every set-up step a fresh machine needs lives here (and in tools/kafka/kafka.mk).
#   make demo    install, then run logscan on the bundled fixture cluster and show findings
#   make test    install (Python env + the Kafka jars of every fixture release), then run every test
#   make bench   decode throughput against kafka-dump-log and kafka-python, same run
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
VENV_STAMP := $(VENV)/.installed

.PHONY: chromium venv test test-fast demo bench bench-data fuzz clean objectstore objectstore-if-go

DEMO_CLUSTER ?= fixtures/hanging/brokers

venv: $(VENV_STAMP)

# The install builds logscan._native from native/ with cargo (setuptools-rust): a change to
# the Rust sources reinstalls.
$(VENV_STAMP): pyproject.toml native/Cargo.toml native/Cargo.lock native/src/lib.rs
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[dev]'
	touch $@

# Debian's Chromium, for the HTML report's browser test (that test skips without it).
chromium:
	@command -v chromium >/dev/null || { command -v apt-get >/dev/null && export DEBIAN_FRONTEND=noninteractive && \
	  { apt-get install -y -q chromium >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null; }; }; } || \
	  echo "chromium not installed: the report's browser test will be skipped"

# SeaweedFS's weed, built once from its Go module source into .work/objectstore (tools/objectstore;
# ~10 min cold on 2 cores, seconds when Go's caches are warm). The object-store tests use it and
# skip, saying why, without it or without Go.
objectstore:
	$(PYTHON) -m tools.objectstore.build

# make test builds it when Go is here; without Go, or when the build fails, the object-store
# tests skip and say why (the reason is printed here too).
objectstore-if-go:
	@if command -v go >/dev/null 2>&1; then $(MAKE) --no-print-directory objectstore || \
	  echo "the object store did not build: the object-store tests will be skipped"; \
	else echo "Go not found: the object-store tests will be skipped"; fi

-include tools/kafka/kafka.mk
-include tools/spark/spark.mk

test: venv kafka-jars-all delta-jars s3a-jars chromium objectstore-if-go
	$(PY) -m pytest -q

test-fast: venv
	$(PY) -m pytest -q -m "not kafka"

# The bundled fixture cluster has three genuinely hanging transactions (made on a live
# Kafka 4.1.1 cluster, confirmed by kafka-transactions find-hanging before the copy).
# logscan scan exits 4 when it finds hanging transactions: that is the expected finding here.
demo: venv delta-jars
	@echo "== logscan scan $(DEMO_CLUSTER)"
	@$(VENV)/bin/logscan scan $(DEMO_CLUSTER); rc=$$?; test $$rc -eq 0 -o $$rc -eq 4
	@echo
	@echo "== the first hanging partition's segment, as kafka-dump-log would print it"
	@$(VENV)/bin/logscan dump --deep-iteration $(DEMO_CLUSTER)/broker-1/hang-0/00000000000000000000.log
	@echo
	@echo "== the Spark job on the same copy, into Delta tables under .work/demo-tables"
	$(PY) -m spark_jobs.scan $(DEMO_CLUSTER) --output .work/demo-tables --scan-id demo
	@echo
	@echo "== an HTML report of those tables"
	$(VENV)/bin/logscan report --tables .work/demo-tables --scan-id demo --out .work/demo-report.html

# A synthetic cluster copy for the scan benchmarks (tools/bench/gen_cluster.py):
#   make bench-data SIZE=1024 PARTITIONS=1000   -> .work/bench-data/<SIZE>mb
SIZE ?= 1024
PARTITIONS ?= 1000
bench-data: venv
	$(PY) -m tools.bench.gen_cluster --out .work/bench-data/$(SIZE)mb --size-mb $(SIZE) --partitions $(PARTITIONS)

# make bench: decode figures, the batch-size curve, the Spark scan, then listing 10,000 and 100,000
# partition folders from an object store (~20 min on 2 cores, and the upload of the folders;
# BENCH_QUICK=1 for a smaller run of every figure).
BENCH_SIZE_MB ?= $(if $(BENCH_QUICK),128,1024)
bench: venv kafka-jars delta-jars
	$(PY) -m tools.bench.decode --size-mb $(BENCH_SIZE_MB)
	$(PY) -m tools.bench.curve $(if $(BENCH_QUICK),--quick)
	$(PY) -m tools.bench.scan $(if $(BENCH_QUICK),--quick)
	$(PY) -m tools.bench.listing $(if $(BENCH_QUICK),--quick)

# Coverage-guided fuzzing of the decoders with atheris (tools/fuzz/README.md):
#   make fuzz FUZZ_TARGET=all FUZZ_RUNS=1000000 FUZZ_TIME=3600   (TIME in s; 0 = no limit)
FUZZ_TARGET ?= all
FUZZ_RUNS ?= 200000
FUZZ_TIME ?= 0
fuzz: venv
	$(PY) -m tools.fuzz.fuzz $(FUZZ_TARGET) -runs=$(FUZZ_RUNS) -max_total_time=$(FUZZ_TIME) -print_final_stats=1

clean:
	rm -rf $(VENV) .kafka .work build *.egg-info native/target logscan/_native*.so
