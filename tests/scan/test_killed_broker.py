"""A broker killed with SIGKILL and copied as the crash left it (issue 32 item 4), on the real
`pending` cluster (Kafka 4.1.1) and the `killed-3.9` / `killed-4.4` clusters (Kafka 3.9.2 and
4.4.0, fixtures/killed, read from their restored copies: tests/killed_fixtures.py), which run
the same scenario: its node was killed before the coordinators' EndTxn and never
restarted, so its log dir has no clean-shutdown producer snapshots, no
`.kafka_cleanshutdown`, and its active segments' indexes are still preallocated. Right before
the kill the harness recorded that node's own describe-producers of the two partitions the
scenario wrote (nothing reached it afterwards). kafka-dump-log of the same release was run
on every file of its copy too; tests/dump/test_fixtures.py compares `logscan dump` with those recorded dumps.

The scan must read the crashed copy without a finding, and rebuild that node's producer state
equal to what it described, loaded the way a broker restarting from this copy would: from the
batches (no snapshot at the log end), which producer_state.loaded_from says."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from logscan.scan.local import scan
from logscan.state.producer_state import FROM_SNAPSHOT
from tests.killed_fixtures import KILLED_CLUSTERS, STORED, markers_pending_notes
from tools.kafka.trimmed import LIMIT_BYTES

PENDING = Path(__file__).resolve().parents[2] / "fixtures" / "pending"
CLUSTERS = [PENDING, *KILLED_CLUSTERS]
_DESCRIBE = ("producer_id", "producer_epoch", "coordinator_epoch", "last_sequence", "last_timestamp",
             "current_txn_start_offset")


def _row(r: dict) -> tuple:
    start = r["CurrentTransactionStartOffset"]
    return (int(r["ProducerId"]), int(r["ProducerEpoch"]), int(r["LatestCoordinatorEpoch"]),
            int(r["LastSequence"]), int(r["LastTimestamp"]), None if start in ("None", "") else int(start))


@pytest.fixture(params=CLUSTERS, ids=[c.name for c in CLUSTERS])
def killed(request):
    """(cluster folder, truth, the scenario's notes): ``markers_pending`` on 4.1.1, the same
    scenario as ``killed_broker`` on 3.9.2 and 4.4.0."""
    truth = json.loads((request.param / "truth" / "truth.json").read_text())
    return request.param, truth, markers_pending_notes(truth)


def test_the_killed_clusters_are_of_the_releases_they_name():
    assert sorted(c.name for c in KILLED_CLUSTERS) == ["killed-3.9", "killed-4.4"]
    assert [json.loads((c / "truth" / "truth.json").read_text())["kafka_version"] for c in KILLED_CLUSTERS] == [
        "3.9.2", "4.4.0"]


def test_the_stored_killed_clusters_are_small_and_restore_to_the_brokers_sizes():
    """No stored file over 256 KiB (the repository's limit is 1 MiB); what was trimmed is the
    metadata log's preallocated index pair, 10 MiB again in the restored copy (the killed
    node's always; on 4.4.0 every node's, a clean stop leaves them so there)."""
    for cluster in KILLED_CLUSTERS:
        stored = STORED / cluster.name
        assert max(p.stat().st_size for p in stored.rglob("*") if p.is_file()) <= LIMIT_BYTES
        assert sum(p.stat().st_size for p in stored.rglob("*") if p.is_file()) < 2_000_000
        truth = json.loads((cluster / "truth" / "truth.json").read_text())
        trimmed = json.loads((stored / "trimmed.json").read_text())["files"]
        killed = truth["stopped_brokers"][0]
        nodes = range(3) if truth["kafka_version"] == "4.4.0" else [killed]
        assert sorted(trimmed) == sorted(f"brokers/broker-{b}/__cluster_metadata-0/00000000000000000000.{x}"
                                         for b in nodes for x in ("index", "timeindex"))
        for rel, f in trimmed.items():
            assert (stored / rel).stat().st_size == f["stored_size"] < LIMIT_BYTES
            assert os.path.getsize(cluster / rel) == f["size"] in (10 * 1024 * 1024, 10 * 1024 * 1024 - 4)


def test_the_copy_is_a_crashed_brokers(killed):
    root, truth, notes = killed
    assert notes["stop"] == "SIGKILL" and truth["stopped_brokers"] == [notes["stopped_broker"]]
    node_dir = root / "brokers" / f"broker-{notes['stopped_broker']}"
    assert not (node_dir / ".kafka_cleanshutdown").exists()
    assert all((root / "brokers" / f"broker-{b}" / ".kafka_cleanshutdown").exists()
               for b in range(3) if b != notes["stopped_broker"])
    # a crash leaves the active segment's index at its preallocated size (the harness's
    # log.index.size.max.bytes, 4096), where a clean stop trims it to its entries
    sizes = {b: (root / "brokers" / f"broker-{b}" / f"{notes['topic']}-0" / "00000000000000000000.index").stat().st_size
             for b in range(3)}
    assert sizes.pop(notes["stopped_broker"]) == 4096 and all(s < 4096 for s in sizes.values()), sizes


def test_the_killed_brokers_producer_state_is_what_it_described_before_the_kill(killed):
    root, truth, notes = killed
    result = scan([root / "brokers"], as_of_ms=truth["recorded_at_ms"])
    assert [f.line() for f in result.findings] == []
    node = notes["stopped_broker"]
    described = notes["stopped_broker_producers"]
    assert sorted(described) == sorted([notes["topic"], notes["done_topic"]])
    for topic, rows in described.items():
        ours = [r for r in result.tables["producer_state"] if (r["broker"], r["topic"], r["partition"]) == (node, topic, 0)]
        assert rows and sorted(tuple(r[c] for c in _DESCRIBE) for r in ours) == sorted(map(_row, rows)), topic
        # no snapshot at the log end: a restarting broker replays the batches
        assert {r["loaded_from"] for r in ours} and FROM_SNAPSHOT not in {r["loaded_from"] for r in ours}
