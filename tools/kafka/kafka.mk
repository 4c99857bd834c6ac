# Kafka harness targets; included by the top-level Makefile (which defines PY and `venv`).
#   make kafka-jars   resolve the pinned Apache Kafka jars into .kafka/libs (skipped when present)
#   make kafka-up     start a 3-node dev cluster under .work/dev (bootstrap printed)
#   make kafka-down   stop it cleanly (KAFKA_DOWN_FLAGS=--hard to SIGKILL)
#   make fixtures     rebuild fixtures/<cluster>/ from scratch against real brokers
KAFKA_LIBS := .kafka/libs
KAFKA_VERSION := 4.1.1
KAFKA_STAMP := $(KAFKA_LIBS)/.complete-$(KAFKA_VERSION)
KAFKA_DEV_WORK := .work/dev

.PHONY: kafka-jars kafka-up kafka-down kafka-status fixtures

kafka-jars: $(KAFKA_STAMP)

# The stamp is written only after mvn succeeded, so an interrupted download is retried; the
# folder is emptied first so that it holds exactly the pom's jars (no stale SLF4J binding).
$(KAFKA_STAMP): tools/kafka/pom.xml
	rm -rf $(KAFKA_LIBS)
	mkdir -p $(KAFKA_LIBS)
	mvn -q -f tools/kafka/pom.xml dependency:copy-dependencies \
	    -DoutputDirectory=$(CURDIR)/$(KAFKA_LIBS) -DincludeScope=runtime
	test -f $(KAFKA_LIBS)/kafka_2.13-$(KAFKA_VERSION).jar
	touch $@

kafka-up: venv kafka-jars
	$(PY) -m tools.kafka.cluster --workdir $(KAFKA_DEV_WORK) start

kafka-down:
	$(PY) -m tools.kafka.cluster --workdir $(KAFKA_DEV_WORK) stop $(KAFKA_DOWN_FLAGS)

kafka-status:
	$(PY) -m tools.kafka.cluster --workdir $(KAFKA_DEV_WORK) status

fixtures: venv kafka-jars
	time $(PY) -m tools.kafka.fixtures --out fixtures --work .work/fixtures
	du -sh fixtures
