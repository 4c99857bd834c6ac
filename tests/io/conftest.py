"""Fixtures of the IO seam's tests: ``file://`` URIs read through logscan.logdir.store (the
remote backend) over a counting, fault-injecting local filesystem."""

from __future__ import annotations

from pathlib import Path

import pytest

from logscan.logdir import store

from .faulty import faulty_filesystem

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
#: Every fixture cluster (real Kafka copies): each one's brokers folder.
CLUSTERS = sorted(p for p in FIXTURES.glob("*/brokers") if p.is_dir())


@pytest.fixture
def stored(monkeypatch):
    """``file://`` URIs read through a FaultyHandler (set its ``fail`` to inject faults),
    retries without their backoff; yields the handler."""
    filesystem, handler = faulty_filesystem()
    monkeypatch.setattr(store, "BACKOFF_S", 0.0)
    store.use_filesystem("file", filesystem)
    try:
        yield handler
    finally:
        store.use_filesystem("file", None)


def local_form(value, uri_root: str, root: str):
    """A remote scan's row (or value) with its URIs written as the local paths they name."""
    if isinstance(value, str):
        return value.replace(uri_root, root)
    if isinstance(value, dict):
        return {k: local_form(v, uri_root, root) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(local_form(v, uri_root, root) for v in value)
    return value
