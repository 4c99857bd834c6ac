"""The scan of a copied cluster: its steps written once (`pipeline`), the local executor that
runs them in one process (`local`, for `logscan scan`, `logscan plan` and the tests; the Spark
executor is spark_jobs.scan), the tables' columns (`rows`) and what a person reads (`summary`).
`replica` reads one replica's files into the facts Kafka's rules (logscan.state) replay.
"""
