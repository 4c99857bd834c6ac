"""list_copy lists with Python's cycle collector paused (collector.young_collections_only: the
listing holds no cycle, and full collections over it while it grew took a fifth of a large
copy's listing), and leaves the collector as it found it, on return and on NoLogDirs."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from logscan.logdir.tree import NoLogDirs
from logscan.scan import listing

HANGING = Path(__file__).resolve().parents[2] / "fixtures" / "hanging" / "brokers"


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_paused_while_listing_and_left_as_it_was(tmp_path, monkeypatch, enabled):
    during = []
    iter_brokers = listing.iter_brokers

    def watched(*args, **kwargs):
        during.append(gc.isenabled())
        yield from iter_brokers(*args, **kwargs)

    monkeypatch.setattr(listing, "iter_brokers", watched)
    (gc.enable if enabled else gc.disable)()
    try:
        assert listing.list_copy([HANGING]).replicas
        after_return = gc.isenabled()
        with pytest.raises(NoLogDirs):
            listing.list_copy([tmp_path])  # an empty folder
        after_raise = gc.isenabled()
    finally:
        gc.enable()
    assert during == [False, False]
    assert (after_return, after_raise) == (enabled, enabled)
