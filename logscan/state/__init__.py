"""Kafka's rules, once, as plain Python over plain rows.

The single-process path (`logscan dump`, tests) and the Spark jobs both call these functions;
Spark code owns distribution, schemas and Delta, never Kafka semantics of its own.
"""
