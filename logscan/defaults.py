"""The defaults an operator meets on every command line, said once: the rules that use them
(logscan.state) and the command lines (logscan.cli, spark_jobs) import them from here, a
module light enough for `logscan dump`'s start-up."""

#: transaction.max.timeout.ms's default: find-hanging's age for a candidate.
DEFAULT_MAX_TRANSACTION_TIMEOUT_MS = 900_000

#: What the abort commands name when no --bootstrap-server is given: plainly a placeholder.
DEFAULT_BOOTSTRAP = "BOOTSTRAP:9092"
