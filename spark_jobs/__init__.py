"""Spark jobs over logscan: thin wiring (sessions, schemas, Delta writes) around logscan."""
