# Spark/Delta targets; included by the top-level Makefile (which defines PY and `venv`).
#   make delta-jars   resolve delta-spark and its runtime dependencies into .delta/libs
#   make s3a-jars     resolve hadoop-aws (pyspark's Hadoop release) and its AWS SDK bundle into
#                     .delta/s3a: Spark's s3a:// filesystem (logscan sql --engine spark, spark-sql)
#   make spark-scan   run spark_jobs/scan.py on each fixture cluster into .work/spark-scan
#                     (one scan_id per cluster: broker ids of different clusters overlap)
#
# The jar is pinned to 4.4.0 while the Python package is 4.4.1: delta-spark 4.4.1 exists as a
# Python wheel only, its jar (io.delta:delta-spark_4.2_2.13:4.4.1, the one
# configure_spark_with_delta_pip asks for) is not published, so spark.jars.packages with the
# pip helper fails. The Python side of delta is a thin py4j wrapper; 4.4.0's jar is built
# against Spark 4.2.0 like pyspark 4.2.0. spark_jobs/session.py passes the jars with
# spark.jars and leaves out those pyspark already ships (Spark's newer Jackson, Hadoop,
# Parquet, Scala win anyway; duplicates only confuse).
DELTA_LIBS := .delta/libs
DELTA_JAR_VERSION := 4.4.0
DELTA_STAMP := $(DELTA_LIBS)/.complete-$(DELTA_JAR_VERSION)
SPARK_SCAN_OUT ?= .work/spark-scan
S3A_LIBS := .delta/s3a
HADOOP_AWS_VERSION := 3.5.0
S3A_STAMP := $(S3A_LIBS)/.complete-$(HADOOP_AWS_VERSION)

.PHONY: delta-jars s3a-jars spark-scan

delta-jars: $(DELTA_STAMP)

# The stamp is written only after mvn succeeded, so an interrupted download is retried.
$(DELTA_STAMP): tools/spark/pom.xml
	rm -rf $(DELTA_LIBS)
	mkdir -p $(DELTA_LIBS)
	mvn -q -f tools/spark/pom.xml dependency:copy-dependencies \
	    -DoutputDirectory=$(CURDIR)/$(DELTA_LIBS) -DincludeScope=runtime
	test -f $(DELTA_LIBS)/delta-spark_4.2_2.13-$(DELTA_JAR_VERSION).jar
	touch $@

s3a-jars: $(S3A_STAMP)

# As delta-jars: the stamp only after mvn succeeded. The version must be pyspark's Hadoop
# (tests/io/test_s3a_spark.py checks it against pyspark's hadoop-client-api jar).
$(S3A_STAMP): tools/spark/s3a-pom.xml
	rm -rf $(S3A_LIBS)
	mkdir -p $(S3A_LIBS)
	mvn -q -f tools/spark/s3a-pom.xml dependency:copy-dependencies \
	    -DoutputDirectory=$(CURDIR)/$(S3A_LIBS) -DincludeScope=runtime
	test -f $(S3A_LIBS)/hadoop-aws-$(HADOOP_AWS_VERSION).jar
	touch $@

spark-scan: venv delta-jars
	for c in fixtures/*/brokers; do \
	    name=$$(basename $$(dirname $$c)); \
	    $(PY) -m spark_jobs.scan $$c --output $(SPARK_SCAN_OUT) --scan-id $$name || exit 1; \
	done
