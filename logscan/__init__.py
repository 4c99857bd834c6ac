"""logscan: offline forensic analyzer for Apache Kafka log dirs and transactions."""

__version__ = "0.1.0"
