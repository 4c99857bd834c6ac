"""The listing's rows for the executors (issue 30: made with less CPU, the same rows): a
replica's work units, one per segment or per byte range of a large one, and its listing row;
the listing's per-replica checks done once per topic, and a partition in two log dirs of a
node still read once."""

from __future__ import annotations

import shutil
from pathlib import Path

from logscan.logdir.tree import file_size
from logscan.scan import pipeline
from logscan.scan.listing import DUPLICATE, ILLEGAL_NAME, list_copy

HANGING = Path(__file__).resolve().parents[2] / "fixtures" / "hanging" / "brokers"


def _broker(tmp_path: Path) -> Path:
    broker = tmp_path / "copy" / "broker-1"
    replica = broker / "orders-0"
    replica.mkdir(parents=True)
    (replica / f"{0:020d}.log").write_bytes(b"x" * 25)
    (replica / f"{9:020d}.log").write_bytes(b"x" * 4)
    (replica / f"{9:020d}.txnindex").write_bytes(b"")
    (replica / f"{9:020d}.snapshot").write_bytes(b"")
    return broker


def test_work_units_one_per_file_or_per_byte_range(tmp_path):
    broker = _broker(tmp_path)
    (listed,) = list_copy([broker]).replicas
    folder = str(broker / "orders-0")
    key = {"broker": 1, "topic": "orders", "partition": 0}
    first, second = f"{folder}/{0:020d}.log", f"{folder}/{9:020d}.log"
    units = pipeline.work_units(listed, 10)
    assert units == [
        *({**key, "file": first, "segment_base_offset": 0, "size": 25, "range_index": i, "ranges": 3,
           "split_bytes": 10, "bytes": b} for i, b in enumerate((10, 10, 5))),
        {**key, "file": second, "segment_base_offset": 9, "size": 4, "range_index": 0, "ranges": 1,
         "split_bytes": 10, "bytes": 4}]
    assert [list(u) for u in units] == [list(units[0])] * 4   # the columns in one order
    assert pipeline.work_units(listed) == [
        {**key, "file": f, "segment_base_offset": b, "size": s, "range_index": 0, "ranges": 1,
         "split_bytes": None, "bytes": s} for f, b, s in ((first, 0, 25), (second, 9, 4))]


def test_a_listing_row_names_every_file_by_base_offset(tmp_path):
    broker = _broker(tmp_path)
    (listed,) = list_copy([broker]).replicas
    folder = str(broker / "orders-0")
    info = pipeline.replica_info(listed)
    assert info["path"] == folder
    assert info["segments"] == [{"base_offset": b, "file": f"{folder}/{b:020d}.log"} for b in (0, 9)]
    assert info["snapshots"] == [{"base_offset": 9, "file": f"{folder}/{9:020d}.snapshot"}]
    assert info["txn_indexes"] == [{"base_offset": 9, "file": f"{folder}/{9:020d}.txnindex"}]
    assert info["indexes"] == []
    assert pipeline.replica_dir(info) == listed.replica


def test_a_local_path_with_a_scheme_like_part_is_sized_locally(tmp_path):
    odd = tmp_path / "a:" / "b"
    odd.mkdir(parents=True)
    (odd / "f.log").write_bytes(b"123")
    assert file_size(f"{tmp_path}/a://b/f.log") == 3
    assert file_size(str(odd / "f.log")) == 3


def test_illegal_topics_are_found_in_each_of_their_partitions_and_txn_indexes_listed(tmp_path):
    broker = tmp_path / "copy" / "broker-1"
    for name in ("bad topic-0", "bad topic-1", "good-0"):
        (broker / name).mkdir(parents=True)
        (broker / name / f"{0:020d}.log").write_bytes(b"")
    (broker / "good-0" / f"{0:020d}.txnindex").write_bytes(b"")
    listing = list_copy([broker])
    assert [(k["topic"], k["partition"]) for k, f in listing.findings if f.reason == ILLEGAL_NAME] == [
        ("bad topic", 0), ("bad topic", 1)]
    assert [(r["topic"], r["file"]) for r in listing.files if r["kind"] == "txn_index"] == [
        ("good", str(broker / "good-0" / f"{0:020d}.txnindex"))]


def test_a_partition_in_two_log_dirs_of_a_node_is_read_once(tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(HANGING / "broker-1", copy / "broker-1")
    second = copy / "broker-1-disk2"
    second.mkdir()
    shutil.copy(copy / "broker-1" / "meta.properties", second / "meta.properties")
    shutil.copytree(copy / "broker-1" / "hang-0", second / "hang-0")
    listing = list_copy([copy])
    keys = [(r.replica.broker, r.replica.topic, r.replica.partition) for r in listing.replicas]
    assert len(keys) == len(set(keys))
    (read,) = [r for r in listing.replicas if (r.replica.topic, r.replica.partition) == ("hang", 0)]
    assert read.replica.path == copy / "broker-1" / "hang-0"   # the one its dir's checkpoints list
    assert [f.reason for k, f in listing.findings if k["topic"] == "hang"] == [DUPLICATE]
