"""The test suite's process-wide settings."""

import os

# The test process launches one JVM (pyspark's gateway) for all its Spark sessions, and JVM-wide
# state grows over the suite's hundreds of scans (Delta's DeltaLog cache keeps every table's log
# and snapshot for an hour; each session keeps its UI data): halfway through
# tests/spark/test_scan.py, run as tests/spark alone, 490 MB of the default 1 GiB heap was live
# after a full collection (jmap -histo:live: 119 DeltaLogs, 168 QueryExecutions, 1,018 SQL
# executions' UI data; 2026-12-08), and in a whole-suite run the JVM exited near that module's
# end. Not the product's shape: a spark-submit scan is one scan in its JVM.
os.environ.setdefault("PYSPARK_SUBMIT_ARGS", "--driver-memory 2g pyspark-shell")
