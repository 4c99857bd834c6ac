"""Test-only helpers: an encoder for the bytes a Kafka broker writes."""
