"""Listing a broker's log dir and reading its small per-replica files: partition folders only
(a file named like one is not one; a symlink to one is), and checkpoint reads that tell a
missing file from a damaged one without blocking on a FIFO."""

from __future__ import annotations

import os
import threading

import pytest

from logscan.logdir.segment import read_small_file
from logscan.logdir.tree import ReplicaDir, scan_broker
from logscan.scan.replica import latest_leader_epoch


def test_a_broker_lists_its_partition_folders_only(tmp_path):
    broker = tmp_path / "broker-7"
    broker.mkdir()
    for name in ("orders-1", "orders-0", "__transaction_state-3"):
        (broker / name).mkdir()
    (broker / "payments-0").write_bytes(b"")  # a file named like a partition folder
    (broker / "not-a-partition").mkdir()
    elsewhere = tmp_path / "elsewhere" / "refunds-2"
    elsewhere.mkdir(parents=True)
    (broker / "refunds-2").symlink_to(elsewhere)  # followed, as Path.is_dir() follows it

    listed = scan_broker(broker)

    assert listed.broker == 7
    assert [(r.topic, r.partition) for r in listed.replicas] == [
        ("__transaction_state", 3), ("orders", 0), ("orders", 1), ("refunds", 2)]
    assert [(s.path, s.reason) for s in listed.skipped] == [
        (str(broker / "not-a-partition"), "not a partition directory")]


def test_a_small_file_is_read_whole(tmp_path):
    path = tmp_path / "leader-epoch-checkpoint"
    path.write_bytes(b"0\n1\n2 0\n")
    assert read_small_file(path) == b"0\n1\n2 0\n"
    path.write_bytes(b"")
    assert read_small_file(path) == b""


def test_no_regular_file_reads_as_none(tmp_path):
    (tmp_path / "a-folder").mkdir()
    (tmp_path / "a-file").write_bytes(b"x")
    assert read_small_file(tmp_path / "missing") is None
    assert read_small_file(tmp_path / "a-folder") is None
    assert read_small_file(tmp_path / "a-file" / "below-a-file") is None


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_passed_over_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "leader-epoch-checkpoint"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(read_small_file(fifo)), daemon=True)
    reader.start()
    reader.join(10)
    assert not reader.is_alive(), "read_small_file waited for a writer of a FIFO"
    assert got == [None]


def _replica(tmp_path) -> ReplicaDir:
    path = tmp_path / "orders-0"
    path.mkdir()
    return ReplicaDir(1, "orders", 0, path)


def test_the_latest_leader_epoch_of_a_replica(tmp_path):
    replica = _replica(tmp_path)
    findings: list = []
    assert latest_leader_epoch(replica, findings) is None  # no checkpoint file
    (replica.path / "leader-epoch-checkpoint").write_bytes(b"0\n3\n0 0\n4 120\n2 300\n")
    assert latest_leader_epoch(replica, findings) == 4
    assert findings == []


def test_a_damaged_leader_epoch_checkpoint_is_a_finding(tmp_path):
    replica = _replica(tmp_path)
    path = replica.path / "leader-epoch-checkpoint"
    path.write_bytes(b"0\n2\n0 0\n")  # two entries announced, one there
    findings: list = []
    assert latest_leader_epoch(replica, findings) is None
    (finding,) = findings
    assert finding.path == str(path)


def test_a_folder_named_like_the_checkpoint_is_no_checkpoint(tmp_path):
    replica = _replica(tmp_path)
    (replica.path / "leader-epoch-checkpoint").mkdir()
    findings: list = []
    assert latest_leader_epoch(replica, findings) is None
    assert findings == []


def test_a_broker_id_comes_from_meta_properties_or_else_the_folder_name(tmp_path):
    from logscan.logdir.tree import broker_id

    broker = tmp_path / "kafka-logs-3"
    broker.mkdir()
    errors: list[str] = []
    assert broker_id(broker, errors) == 3  # no meta.properties
    (broker / "meta.properties").mkdir()
    assert broker_id(broker, errors) == 3  # a folder of that name is no meta.properties
    assert errors == []
    (broker / "meta.properties").rmdir()
    (broker / "meta.properties").write_bytes(b"version=1\nnode.id=12\ncluster.id=abc\n")
    assert broker_id(broker, errors) == 12
    assert errors == []


def test_an_offset_checkpoint_is_read_or_reported(tmp_path):
    from logscan.logdir.tree import read_offset_checkpoint

    path = tmp_path / "replication-offset-checkpoint"
    errors: list[str] = []
    assert read_offset_checkpoint(path, errors) == {}
    path.write_bytes(b"0\n2\norders 0 17\norders 1 4\n")
    assert read_offset_checkpoint(path, errors) == {("orders", 0): 17, ("orders", 1): 4}
    assert errors == []
    path.write_bytes(b"0\n3\norders 0 17\n")  # three entries announced, one there
    assert read_offset_checkpoint(path, errors) == {}
    assert len(errors) == 1 and errors[0].startswith(f"{path}: ")


def test_folders_come_in_name_order_and_a_replicas_files_in_log_order(tmp_path):
    broker = tmp_path / "broker-1"
    for name in ("orders-2", "orders-10", "orders-1"):
        (broker / name).mkdir(parents=True)
    replica = broker / "orders-10"
    for base in (2000, 100, 0):  # written out of order; listed in log order
        for suffix in (".log", ".index", ".snapshot", ".txnindex"):
            (replica / f"{base:020d}{suffix}").write_bytes(b"")
    (replica / f"{50:020d}.log.deleted").write_bytes(b"")
    (replica / "leader-epoch-checkpoint").write_bytes(b"0\n0\n")

    listed = scan_broker(broker)

    # Path order: by name, character by character ("orders-10" before "orders-2").
    assert [r.path.name for r in listed.replicas] == ["orders-1", "orders-10", "orders-2"]
    r = listed.replicas[1]
    assert r.segments == [(b, replica / f"{b:020d}.log") for b in (0, 100, 2000)]
    assert r.snapshots == [(b, replica / f"{b:020d}.snapshot") for b in (0, 100, 2000)]
    assert r.txn_indexes == [(b, replica / f"{b:020d}.txnindex") for b in (0, 100, 2000)]
    assert [(s.path, s.reason) for s in listed.skipped] == [
        (str(replica / f"{50:020d}.log.deleted"), "deleted file")]
    with_superseded = scan_broker(broker, include_superseded=True).replicas[1]
    assert (50, replica / f"{50:020d}.log.deleted") in with_superseded.segments
