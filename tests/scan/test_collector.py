"""The single-process scan runs with Python's cyclic collector paused (logscan.scan.collector)
and collects the young generations itself: what it leaves in cycles is still freed as it
goes, and the collector is left as it was found. (The Spark steps' own use of it is in
tests/spark/test_tasks.py.)"""

import gc
import weakref
from pathlib import Path

import pytest

from logscan.scan import collector, local

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CLUSTER = sorted(p.parent.parent for p in FIXTURES.glob("*/truth/truth.json"))[0]


class _Cycle:
    """An object that refers to itself: unreachable once dropped, only the cyclic collector
    frees it."""

    def __init__(self, refs: list):
        self.me = self
        refs.append(weakref.ref(self))


@pytest.mark.parametrize("was_enabled", [True, False])
def test_the_scan_pauses_the_collector_and_frees_each_replicas_cycles(monkeypatch, was_enabled):
    monkeypatch.setattr(collector, "YOUNG_OBJECTS", 0)   # collect after every replica
    cycles, seen = [], []
    real = local.pipeline.Replay.finish

    def leaving_a_cycle(*args, **kw):
        seen.append((gc.isenabled(), [ref() is None for ref in cycles]))
        _Cycle(cycles)
        return real(*args, **kw)

    monkeypatch.setattr(local.pipeline.Replay, "finish", leaving_a_cycle)
    (gc.enable if was_enabled else gc.disable)()
    try:
        result = local.scan([CLUSTER / "brokers"])
        assert gc.isenabled() is was_enabled
    finally:
        gc.enable()
    assert len(seen) == len(result.tables["partition_state"]) > 10
    assert not any(enabled for enabled, _ in seen), "the collector ran during the scan"
    assert all(all(freed) for _, freed in seen), "a replica's cycle outlived the replica"


def test_young_generations_are_collected_past_the_limit_only(monkeypatch):
    monkeypatch.setattr(collector, "YOUNG_OBJECTS", 1000)
    with collector.young_collections_only():
        gc.collect()
        refs = []
        _Cycle(refs)
        collector.collect_young()
        assert refs[0]() is not None        # a few objects since the last collection: none
        keep = [[] for _ in range(1000)]    # tracked objects past the limit
        collector.collect_young()
        assert refs[0]() is None and keep
