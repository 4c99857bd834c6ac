"""Drivers that read a copied cluster and apply Kafka's rules.

`replica` turns one replica's files into plain rows (shared with the Spark jobs); `local`
is the single-process driver used by `logscan scan --local`, the tests and `make demo`.
"""
