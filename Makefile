# logscan: every set-up step a fresh machine needs lives here (and in tools/kafka/kafka.mk).
#   make demo    install, then run logscan on the bundled fixture cluster and show findings
#   make test    install (Python env + Kafka jars), then run every test
#   make bench   decode throughput against kafka-dump-log and kafka-python, same run
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
VENV_STAMP := $(VENV)/.installed

.PHONY: venv test test-fast demo bench clean

venv: $(VENV_STAMP)

$(VENV_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

-include tools/kafka/kafka.mk

test: venv kafka-jars
	$(PY) -m pytest -q

test-fast: venv
	$(PY) -m pytest -q -m "not kafka"

BENCH_SIZE_MB ?= 1024
bench: venv kafka-jars
	$(PY) -m tools.bench.decode --size-mb $(BENCH_SIZE_MB)

clean:
	rm -rf $(VENV) .kafka .work build *.egg-info
