# Kafka harness targets; included by the top-level Makefile (which defines PY and `venv`).
#   make kafka-jars       resolve Apache Kafka $(KAFKA_VERSION) (default 4.1.1) into
#                         .kafka/<version>/libs (skipped when present);
#                         `make kafka-jars KAFKA_VERSION=4.4.0` for another release
#   make kafka-jars-all   every release a committed fixture cluster runs (KAFKA_VERSIONS:
#                         3.9.2 for kafka-3.9, 4.1.1, 4.4.0 for kafka-4.4)
#   make kafka-up     start a 3-node dev cluster of $(KAFKA_VERSION) under .work/dev
#   make kafka-down   stop it cleanly (KAFKA_DOWN_FLAGS=--hard to SIGKILL)
#   make fixtures     rebuild fixtures/<cluster>/ from scratch against real brokers, each
#                     cluster on the release its ClusterSpec names (tools/kafka/scenarios.py)
KAFKA_VERSION ?= 4.1.1
# Keep in step with the kafka_version of tools/kafka's ClusterSpecs (tests/kafka checks it).
KAFKA_VERSIONS := 3.9.2 4.1.1 4.4.0
KAFKA_DEV_WORK := .work/dev
kafka_stamp = .kafka/$(1)/libs/.complete

.PHONY: kafka-jars kafka-jars-all kafka-up kafka-down kafka-status fixtures

kafka-jars: $(call kafka_stamp,$(KAFKA_VERSION))

kafka-jars-all: $(foreach v,$(KAFKA_VERSIONS),$(call kafka_stamp,$(v)))

# One folder per release, each holding exactly that release's jars (the pom's kafka.version
# set on the command line). The stamp is written only after mvn succeeded, so an interrupted
# download is retried; the folder is emptied first (no stale jar of another resolution).
# A release that brings its own SLF4J binding (3.x: slf4j-reload4j, Kafka's log4j 1 API) keeps
# it and loses the pom's log4j2 one: SLF4J 1.7 would pick one of two bindings by jar order.
.kafka/%/libs/.complete: tools/kafka/pom.xml
	rm -rf .kafka/$*/libs
	mkdir -p .kafka/$*/libs
	mvn -q -f tools/kafka/pom.xml dependency:copy-dependencies -Dkafka.version=$* \
	    -DoutputDirectory=$(CURDIR)/.kafka/$*/libs -DincludeScope=runtime
	test -f .kafka/$*/libs/kafka_2.13-$*.jar
	if ls .kafka/$*/libs/slf4j-reload4j-*.jar >/dev/null 2>&1; then \
	    rm -f .kafka/$*/libs/log4j-slf4j-impl-*.jar; fi
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
