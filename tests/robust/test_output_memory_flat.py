"""`logscan scan --output DIR --executor local` (every table but batches, transactional_id_history
and partition_impact among them) holds its peak memory flat from a small to a large
transactional copy (issue 33 item 1, after issue 35's tables).

The copies are make bench's generator's (tools/bench/gen_cluster.py, the layout of
test_scan_memory_flat: 30 partitions of 3 replicas, 1 KiB uncompressed batches, segments of
1 MiB) with the whole of each transactional id's ``__transaction_state`` log kept, as a
coordinator writes it before the cleaner runs (Ongoing, Prepare*, Complete* per transaction;
the generator itself writes each id's last record only, as after compaction): more bytes mean
more transactions, more spans and more coordinator records, the same replicas and ids. Each
id's last record is the generator's, so the same hanging transactions are found.

The scan runs in a subprocess under RLIMIT_DATA, its anonymous resident memory sampled
(bigfile.probe). Before the history step streamed, the coordinator's loaded records were held
for it (and the served spans by it, and every segment's files row for partition_impact): the
300 MB copy's scan peaked 77 MiB above the 30 MB one's (124 -> 201 MiB; 20,363
transactions, 183,279 txn_log rows), ~22 MiB of it the Delta writer's row groups of 65,536 rows
(output.ROW_GROUP_BYTES now bounds them too); after, 122 -> 120 MiB.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import pytest

from tools.bench import gen_cluster as G

from .bigfile import MiB, probe

pytestmark = pytest.mark.heavy

#: Growth of the peak anonymous memory from the small copy to the large one that is noise.
NOISE_KIB = 8 * 1024
SIZES_MB = (30, 300)
#: The Delta writers' thread pools need more than the scan's own limit (test_memory.SCAN_LIMIT).
OUTPUT_LIMIT = 1024 * MiB


class _WholeLog(G.Generator):
    """The generator, writing every transaction's coordinator records, not only each id's last."""

    def __init__(self, args) -> None:
        super().__init__(args)
        self.ended: dict[int, list[tuple]] = {}

    def end_txn(self, w, p, plan, **kw) -> None:
        super().end_txn(w, p, plan, **kw)
        self.ended.setdefault(p.producer_id, []).append(p.last_state)

    def write_txn_state(self, out: Path) -> None:
        # a producer per record, each naming its id's state then: the generator writes them in
        # this order, an id's records in one partition
        kept = self.txn_producers
        self.txn_producers = [dataclasses.replace(p, last_state=s) for p in kept for s in self._log(p)]
        try:
            super().write_txn_state(out)
        finally:
            self.txn_producers = kept

    def _log(self, p) -> list[tuple]:
        if p.last_state is None:   # a producer the coordinator must have no record of (planted)
            return []
        states = []
        for complete, parts, start, end in self.ended.get(p.producer_id, []):
            states += [(1, parts, start, start), (complete - 2, parts, start, end), (complete, parts, start, end)]
        if not states or states[-1] != p.last_state:
            states.append(p.last_state)
        return states


def _generate(out: Path, size_mb: int) -> dict:
    args = argparse.Namespace(out=str(out), size_mb=size_mb, brokers=3, partitions=30, replication=3, segment_mb=1,
                              hanging=4, seed=1, batch_kib=1, batch_bytes=None, codecs=["none"],
                              reuse=False)
    return _WholeLog(args).run()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """size in MB -> (manifest, probe of the scan, the output folder)."""
    out = {}
    for size in SIZES_MB:
        work = tmp_path_factory.mktemp(f"output{size}")
        manifest = _generate(work / "copy", size)
        tables = work / "tables"
        out[size] = manifest, probe(["scan", "--no-progress", "--format", "json", "--executor", "local",
                                     "--output", str(tables), str(work / "copy")], OUTPUT_LIMIT, work), tables
    return out


@pytest.mark.parametrize("size", SIZES_MB)
def test_each_scan_writes_the_history_of_every_transaction(runs, size):
    from deltalake import DeltaTable

    manifest, run, tables = runs[size]
    assert run.returncode == 4 and "Traceback" not in run.stderr_tail and "MemoryError" not in run.stderr_tail, \
        run.stderr_tail
    history = DeltaTable(str(tables / "transactional_id_history")).to_pyarrow_table().to_pylist()
    # every transaction the generator ended, and the planted one the coordinator completed
    # while its partition never got the marker
    moved_on = sum(h["reason"] == "coordinator_moved_on" for h in manifest["hanging"])
    assert sum(r["committed"] + r["aborted"] for r in history) == manifest["totals"]["transactions"] + moved_on
    assert sum(r["span_commits"] + r["span_aborts"] for r in history) == manifest["totals"]["transactions"]
    impact = DeltaTable(str(tables / "partition_impact")).to_pyarrow_table().to_pylist()
    assert sum(r["segments"] for r in impact if r["topic"] != G.TXN_STATE_TOPIC) == \
        sum(p["segments"] * len(p["replicas"]) for p in manifest["partitions"].values())


def test_peak_memory_is_flat_in_the_transactions(runs):
    small, large = (runs[s][1].peak_anon_kib for s in SIZES_MB)
    assert small > 0 and large > 0, "no RssAnon sample was read from /proc"
    growth = large - small
    assert growth < NOISE_KIB, (f"anonymous memory grew by {growth} KiB from {SIZES_MB[0]} MB to {SIZES_MB[1]} MB "
                                f"of transactional segments: {small} -> {large} KiB")
