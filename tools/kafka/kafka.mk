# Kafka harness targets; included by the top-level Makefile (which defines PY and `venv`).
#   make kafka-jars       resolve Apache Kafka $(KAFKA_VERSION) (default 4.1.1) into
#                         .kafka/<version>/libs (skipped when present);
#                         `make kafka-jars KAFKA_VERSION=4.4.0` for another release
#   make kafka-jars-all   every release a committed fixture cluster runs (KAFKA_VERSIONS)
#   make kafka-up     start a 3-node dev cluster of $(KAFKA_VERSION) under .work/dev
#   make kafka-down   stop it cleanly (KAFKA_DOWN_FLAGS=--hard to SIGKILL)
#   make fixtures     rebuild fixtures/<cluster>/ from scratch against real brokers, each
#                     cluster on the release its ClusterSpec names (tools/kafka/scenarios.py)
KAFKA_VERSION ?= 4.1.1
# Keep in step with the kafka_version of tools/kafka's ClusterSpecs (tests/kafka checks it).
KAFKA_VERSIONS := 4.1.1 4.4.0
KAFKA_DEV_WORK := .work/dev
kafka_stamp = .kafka/$(1)/libs/.complete

.PHONY: kafka-jars kafka-jars-all kafka-up kafka-down kafka-status fixtures

kafka-jars: $(call kafka_stamp,$(KAFKA_VERSION))

kafka-jars-all: $(foreach v,$(KAFKA_VERSIONS),$(call kafka_stamp,$(v)))

# One folder per release, each holding exactly that release's jars (the pom's kafka.version
# set on the command line). The stamp is written only after mvn succeeded, so an interrupted
# download is retried; the folder is emptied first (no stale jar of another resolution).
.kafka/%/libs/.complete: tools/kafka/pom.xml
	rm -rf .kafka/$*/libs
	mkdir -p .kafka/$*/libs
	mvn -q -f tools/kafka/pom.xml dependency:copy-dependencies -Dkafka.version=$* \
	    -DoutputDirectory=$(CURDIR)/.kafka/$*/libs -DincludeScope=runtime
	test -f .kafka/$*/libs/kafka_2.13-$*.jar
	touch $@

kafka-up: venv kafka-jars
	$(PY) -m tools.kafka.cluster --workdir $(KAFKA_DEV_WORK) start --kafka-version $(KAFKA_VERSION)

kafka-down:
	$(PY) -m tools.kafka.cluster --workdir $(KAFKA_DEV_WORK) stop $(KAFKA_DOWN_FLAGS)

kafka-status:
	$(PY) -m tools.kafka.cluster --workdir $(KAFKA_DEV_WORK) status

fixtures: venv kafka-jars-all
	time $(PY) -m tools.kafka.fixtures --out fixtures --work .work/fixtures
	du -sh fixtures
