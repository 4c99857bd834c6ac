"""Files the scan reads whole have a cap per kind (issue 33): a producer snapshot, a log dir's
offset checkpoints, a leader-epoch-checkpoint, meta.properties.

Each starts as the real file a Kafka 4.1.1 broker wrote in the `hanging` cluster. Grown past
its kind's cap (logscan.logdir.segment.SMALL_FILE_CAPS) it is a located finding (the file, the
first byte not read, ``too-large``), its `files` row says ``unreadable``, and every other
replica is scanned as in the untouched copy. A snapshot grown with valid entries (a file Kafka
would load) that the broker keeps on load also leaves its replica ``incomplete``: the producers
the broker loads from it are not known, so no verdict rests on that replica. Grown to
gigabytes (sparse files: no disk), none of them takes the scan's memory: before the caps, each
was read whole, and under the probe's RLIMIT_DATA the scan died with a MemoryError.
"""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

import pytest
from crc32c import crc32c

from logscan.format import snapshot as S
from logscan.logdir.segment import SMALL_FILE_CAPS, TOO_LARGE
from logscan.scan.local import scan

from .bigfile import probe
from .test_hostile_fs import (AS_OF, BROKER, HANGING, PAST_THE_HANGS, _copy, _findings, _in_partition,
                              _on_broker, _partition, _untouched)
from .test_memory import SCAN_LIMIT

#: The real snapshot of the hostile partition (hang-0 on broker 1): the largest one past its
#: only segment's base offset, which Kafka keeps on load (a clean shutdown's snapshot).
SNAPSHOT = "00000000000000000004.snapshot"
#: A producer id no batch of the copy has.
STRANGER = 987_654_321


@pytest.fixture(scope="module")
def reference():
    return scan([HANGING / "brokers"], as_of_ms=AS_OF)


def _grown_snapshot(path: Path, size: int) -> None:
    """The real snapshot with entries of one more producer appended until it has ``size``
    bytes or up to 45 more, its count and CRC-32C rewritten: a file Kafka reads and loads."""
    data = path.read_bytes()
    assert S.decode_producer_snapshot(data).crc_valid
    count = (len(data) - S.ENTRIES_OFFSET) // S.ENTRY_SIZE
    extra = -(-(size - len(data)) // S.ENTRY_SIZE)
    entry = S.ENTRY.pack(STRANGER, 0, 9, 3, 0, AS_OF, -1, -1)
    body = struct.pack(">i", count + extra) + data[S.ENTRIES_OFFSET:] + entry * extra
    path.write_bytes(S.VERSION_FIELD.pack(S.SNAPSHOT_VERSION) + struct.pack(">I", crc32c(body)) + body)
    assert S.decode_producer_snapshot(path.read_bytes()).crc_valid
    assert size <= path.stat().st_size < size + S.ENTRY_SIZE


def _padded(path: Path, size: int) -> None:
    """The real file, then zero bytes to ``size`` (a sparse tail)."""
    with open(path, "r+b") as f:
        f.truncate(size)


def _only_finding(result, path: Path, cap: int):
    mine = [f for f in result.findings if f.path == str(path)]
    assert [(f.reason, f.position) for f in mine] == [(TOO_LARGE, cap)], result.findings
    assert f"{cap:,} bytes" in mine[0].message and "\n" not in mine[0].message
    (row,) = [r for r in result.tables["files"] if r["file"] == str(path)]
    assert row["status"] == "unreadable", row
    return mine[0]


def test_a_real_snapshot_grown_past_the_cap(tmp_path, reference):
    copy = _copy(tmp_path)
    path = _partition(copy) / SNAPSHOT
    cap = SMALL_FILE_CAPS["snapshot"]
    _grown_snapshot(path, cap + 1)
    result = scan([copy], as_of_ms=AS_OF)
    finding = _only_finding(result, path, cap)
    # every other replica as in the untouched copy
    assert _untouched(result, _in_partition) == _untouched(reference, _in_partition)
    assert _findings(result, copy, _in_partition) == _findings(reference, HANGING / "brokers", _in_partition)
    # the grown snapshot is one the broker loads: what it holds is not known, so the replica is
    # a copy short of what the broker has, and no verdict rests on it
    (state,) = [r for r in result.tables["partition_state"]
                if (r["broker"], r["topic"], r["partition"]) == (BROKER, "hang", 0)]
    assert f"producer snapshot {SNAPSHOT} not read ({finding.message})" in state["copy_gap"]
    assert not any(r["hanging"] for r in result.tables["hanging_candidates"]
                   if (r["broker"], r["topic"], r["partition"]) == (BROKER, "hang", 0))
    assert not [r for r in result.tables["producer_snapshots"] if r["file"] == str(path)]


def test_a_snapshot_just_under_the_cap_is_read(tmp_path):
    """The control: at the cap the snapshot is read and its producers loaded."""
    copy = _copy(tmp_path)
    path = _partition(copy) / SNAPSHOT
    cap = SMALL_FILE_CAPS["snapshot"]
    _grown_snapshot(path, cap - S.ENTRY_SIZE + 1)
    assert path.stat().st_size <= cap
    result = scan([copy], as_of_ms=AS_OF)
    assert [f for f in result.findings if f.path == str(path)] == []
    assert any(r["producer_id"] == STRANGER for r in result.tables["producer_snapshots"] if r["file"] == str(path))


@pytest.mark.parametrize("name", ["replication-offset-checkpoint", "recovery-point-offset-checkpoint",
                                  "meta.properties"])
def test_a_log_dir_file_padded_past_its_cap(tmp_path, reference, name):
    copy = _copy(tmp_path)
    path = copy / f"broker-{BROKER}" / name
    cap = SMALL_FILE_CAPS["meta.properties" if name == "meta.properties" else "offset-checkpoint"]
    _padded(path, cap + 1)
    result = scan([copy], as_of_ms=AS_OF)
    mine = [f for f in result.findings if f.path == str(path)]
    assert [(f.reason, f.position) for f in mine] == [(TOO_LARGE, cap)], result.findings
    if name != "meta.properties":
        (row,) = [r for r in result.tables["files"] if r["file"] == str(path)]
        assert row["status"] == "unreadable", row
    # the other brokers' replicas as in the untouched copy (this broker's lack their checkpoint)
    drop = ("replicas", "replica_differences")
    assert _untouched(result, _on_broker, drop).keys() == _untouched(reference, _on_broker, drop).keys()


def test_a_leader_epoch_checkpoint_padded_past_its_cap(tmp_path, reference):
    copy = _copy(tmp_path)
    path = _partition(copy) / "leader-epoch-checkpoint"
    cap = SMALL_FILE_CAPS["leader-epoch-checkpoint"]
    _padded(path, cap + 1)
    result = scan([copy], as_of_ms=AS_OF)
    mine = [f for f in result.findings if f.path == str(path)]
    assert [(f.reason, f.position) for f in mine] == [(TOO_LARGE, cap)], result.findings
    assert _untouched(result, _in_partition) == _untouched(reference, _in_partition)


GiB = 1 << 30


@pytest.mark.parametrize("where", ["snapshot", "replication-offset-checkpoint", "leader-epoch-checkpoint",
                                   "meta.properties"])
def test_a_multi_gigabyte_file_does_not_take_the_scans_memory(tmp_path, where):
    """`logscan scan` of a copy where one such file is 4 GiB (sparse) under RLIMIT_DATA =
    SCAN_LIMIT: a finding and exit 1, never a MemoryError."""
    copy = _copy(tmp_path)
    path = {"snapshot": _partition(copy) / SNAPSHOT,
            "leader-epoch-checkpoint": _partition(copy) / "leader-epoch-checkpoint"}.get(
        where, copy / f"broker-{BROKER}" / where)
    _padded(path, 4 * GiB)
    run = probe(["scan", str(copy), "--no-progress", "--max-transaction-timeout-ms", PAST_THE_HANGS],
                SCAN_LIMIT, tmp_path)
    assert not run.out_of_memory and "Traceback" not in run.stderr_tail, run.stderr_tail
    assert run.returncode == 1, (run.returncode, run.stderr_tail, run.stdout_head)
    assert f"logscan: {path}: byte " in run.stdout_head + run.stderr_tail
    os.unlink(path)
    shutil.rmtree(copy)
