"""Committed offsets rebuilt from __consumer_offsets by the group coordinator's rules
(logscan.state.offsets), on segments written with the project's encoder and read through
logscan.scan.consumer_offsets, and the groups a hang holds back (affected_groups)."""

from __future__ import annotations

import struct

import pytest

from logscan.format.message import encode_message
from logscan.format.offsets import GROUP_METADATA_KEY, GROUP_METADATA_VALUE, OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE
from logscan.logdir.tree import ReplicaDir
from logscan.scan.consumer_offsets import replica_rows, segment_rows
from logscan.state.offsets import (COMMITTED, OPEN, PENDING, READ_COMMITTED_STUCK, UNSTABLE_OFFSET_COMMIT,
                                   affected_groups, committed_offsets)
from logscan.testing.encoder import Rec, encode_batch, end_txn_marker_batch

T0 = 1_700_000_000_000
PID = 4000


def commit_record(group: str, topic: str, partition: int, offset: int | None, ts: int = T0,
                  version: int = 3) -> Rec:
    key = struct.pack(">h", 1) + encode_message(OFFSET_COMMIT_KEY, 0,
                                                {"group": group, "topic": topic, "partition": partition})
    value = None if offset is None else struct.pack(">h", version) + encode_message(
        OFFSET_COMMIT_VALUE, version, {"offset": offset, "leaderEpoch": 7, "metadata": "m", "commitTimestamp": ts})
    return Rec(value, key, (), ts)


class Log:
    """A __consumer_offsets segment built batch by batch at increasing offsets."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.next_offset = 0

    def plain(self, *recs: Rec) -> "Log":
        self.parts.append(encode_batch(list(recs), base_offset=self.next_offset))
        self.next_offset += len(recs)
        return self

    def txn(self, pid: int, *recs: Rec, epoch: int = 0) -> "Log":
        self.parts.append(encode_batch(list(recs), base_offset=self.next_offset, transactional=True,
                                       producer_id=pid, producer_epoch=epoch, base_sequence=0))
        self.next_offset += len(recs)
        return self

    def marker(self, pid: int, commit: bool, ts: int = T0, epoch: int = 1) -> "Log":
        self.parts.append(end_txn_marker_batch(commit=commit, coordinator_epoch=0, base_offset=self.next_offset,
                                               producer_id=pid, producer_epoch=epoch, timestamp=ts))
        self.next_offset += 1
        return self

    def write(self, tmp_path, partition: int = 0) -> str:
        path = tmp_path / f"{self.next_offset:020d}.log"
        path.write_bytes(b"".join(self.parts))
        return str(path)

    def offsets(self, tmp_path, **kw) -> list[dict]:
        findings: list = []
        rows = list(segment_rows(self.write(tmp_path), 0, findings))
        assert findings == []
        return committed_offsets(rows, **kw)


def view(rows: list[dict]) -> set[tuple]:
    return {(r["state"], r["group_id"], r["topic"], r["partition"], r["committed_offset"], r["producer_id"])
            for r in rows}


def test_the_last_plain_commit_wins(tmp_path):
    log = Log().plain(commit_record("g", "t", 0, 5), commit_record("g", "t", 1, 2)).plain(commit_record("g", "t", 0, 9))
    rows = log.offsets(tmp_path)
    assert view(rows) == {(COMMITTED, "g", "t", 0, 9, -1), (COMMITTED, "g", "t", 1, 2, -1)}
    (r,) = [r for r in rows if r["partition"] == 0]
    assert (r["record_offset"], r["leader_epoch"], r["metadata"], r["commit_timestamp_ms"]) == (2, 7, "m", T0)


def test_a_tombstone_deletes_the_offset(tmp_path):
    log = Log().plain(commit_record("g", "t", 0, 5), commit_record("g", "t", 1, 2)).plain(commit_record("g", "t", 1, None))
    assert view(log.offsets(tmp_path)) == {(COMMITTED, "g", "t", 0, 5, -1)}


def test_a_transactional_commit_counts_once_its_commit_marker_is_there(tmp_path):
    log = Log().plain(commit_record("g", "t", 0, 5)).txn(PID, commit_record("g", "t", 0, 8))
    assert view(log.offsets(tmp_path)) == {(COMMITTED, "g", "t", 0, 5, -1), (PENDING, "g", "t", 0, 8, PID)}
    log.marker(PID, commit=True)
    assert view(log.offsets(tmp_path)) == {(COMMITTED, "g", "t", 0, 8, PID)}


def test_an_abort_marker_drops_the_pending_commit(tmp_path):
    log = Log().plain(commit_record("g", "t", 0, 5)).txn(PID, commit_record("g", "t", 0, 8)).marker(PID, commit=False)
    assert view(log.offsets(tmp_path)) == {(COMMITTED, "g", "t", 0, 5, -1)}


def test_a_plain_commit_after_the_transactional_one_survives_its_commit_marker(tmp_path):
    # OffsetMetadataManager.replayEndTransactionMarker keeps the committed offset whose record
    # is later in the log: the plain 6 was written after the pending 8
    log = (Log().txn(PID, commit_record("g", "t", 0, 8)).plain(commit_record("g", "t", 0, 6))
           .marker(PID, commit=True))
    assert view(log.offsets(tmp_path)) == {(COMMITTED, "g", "t", 0, 6, -1)}


def test_a_tombstone_drops_the_pending_commits_of_open_transactions(tmp_path):
    log = (Log().txn(PID, commit_record("g", "t", 0, 8), commit_record("g", "t", 1, 3))
           .plain(commit_record("g", "t", 0, None)))
    assert view(log.offsets(tmp_path)) == {(PENDING, "g", "t", 1, 3, PID)}
    log.marker(PID, commit=True)
    assert view(log.offsets(tmp_path)) == {(COMMITTED, "g", "t", 1, 3, PID)}


def test_pending_commits_are_kept_per_producer_and_a_marker_ends_only_its_own(tmp_path):
    other = PID + 1
    log = (Log().txn(PID, commit_record("a", "t", 0, 1)).txn(other, commit_record("b", "t", 0, 2))
           .txn(PID, commit_record("a", "t", 0, 4)).marker(other, commit=True))
    assert view(log.offsets(tmp_path)) == {(COMMITTED, "b", "t", 0, 2, other), (PENDING, "a", "t", 0, 4, PID)}


def test_a_marker_without_pending_commits_changes_nothing(tmp_path):
    log = Log().plain(commit_record("g", "t", 0, 5)).marker(PID, commit=True)
    assert view(log.offsets(tmp_path)) == {(COMMITTED, "g", "t", 0, 5, -1)}


def test_group_metadata_records_are_not_offsets(tmp_path):
    key = struct.pack(">h", 2) + encode_message(GROUP_METADATA_KEY, 0, {"group": "g"})
    value = struct.pack(">h", 3) + encode_message(GROUP_METADATA_VALUE, 3, {
        "protocolType": "consumer", "generation": 1, "protocol": "range", "leader": "m",
        "currentStateTimestamp": T0, "members": []})
    log = Log().plain(Rec(value, key, (), T0), commit_record("g", "t", 0, 5))
    assert view(log.offsets(tmp_path)) == {(COMMITTED, "g", "t", 0, 5, -1)}


def test_what_is_above_the_high_watermark_is_not_served(tmp_path):
    log = Log().plain(commit_record("g", "t", 0, 5)).plain(commit_record("g", "t", 0, 9))
    assert view(log.offsets(tmp_path, end_offset=1)) == {(COMMITTED, "g", "t", 0, 5, -1)}


def test_as_of_stops_at_the_first_record_written_after_it(tmp_path):
    log = (Log().plain(commit_record("g", "t", 0, 5, ts=T0)).txn(PID, commit_record("g", "t", 0, 8, ts=T0 + 10))
           .marker(PID, commit=True, ts=T0 + 20))
    assert view(log.offsets(tmp_path, as_of_ms=T0 + 15)) == {(COMMITTED, "g", "t", 0, 5, -1),
                                                              (PENDING, "g", "t", 0, 8, PID)}
    assert view(log.offsets(tmp_path, as_of_ms=T0 + 20)) == {(COMMITTED, "g", "t", 0, 8, PID)}


def test_a_damaged_batch_is_a_finding_and_the_rest_is_read(tmp_path):
    log = Log().plain(commit_record("g", "t", 0, 5)).plain(commit_record("g", "t", 1, 6))
    path = log.write(tmp_path)
    data = bytearray(open(path, "rb").read())
    data[-1] ^= 0xFF  # the second batch's last byte: its CRC fails
    open(path, "wb").write(bytes(data))
    findings: list = []
    rows = list(segment_rows(path, 0, findings))
    assert [f.reason for f in findings] == ["crc"]
    assert view(committed_offsets(rows)) == {(COMMITTED, "g", "t", 0, 5, -1)}


def test_a_replica_is_read_segment_by_segment_in_log_order(tmp_path):
    first = Log().txn(PID, commit_record("g", "t", 0, 8))
    second = Log()
    second.next_offset = first.next_offset
    second.marker(PID, commit=True)
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    replica = ReplicaDir(0, "__consumer_offsets", 0, tmp_path,
                         segments=[(0, first.write(a)), (first.next_offset, second.write(b))])
    assert view(committed_offsets(replica_rows(replica))) == {(COMMITTED, "g", "t", 0, 8, PID)}


# --- affected_groups -----------------------------------------------------------------------------

def offset(group, topic, partition, value, state=COMMITTED, producer_id=-1, offsets_partition=0, ts=T0):
    return {"offsets_partition": offsets_partition, "group_id": group, "topic": topic, "partition": partition,
            "state": state, "committed_offset": value, "leader_epoch": -1, "metadata": "",
            "commit_timestamp_ms": ts, "record_offset": 0, "record_timestamp_ms": ts,
            "producer_id": producer_id, "producer_epoch": 0 if producer_id >= 0 else -1}


def state(topic, partition, lso, hw, broker=0, leader=0, oldest=-1):
    return {"broker": broker, "topic": topic, "partition": partition, "last_stable_offset": lso,
            "high_watermark": hw, "leader": leader, "is_leader": broker == leader,
            "oldest_txn_last_timestamp": oldest}


def candidate(topic, partition, producer_id, start_offset, hanging=True, reason="no_coordinator_record",
              broker=0, last_timestamp=T0):
    return {"broker": broker, "topic": topic, "partition": partition, "producer_id": producer_id,
            "producer_epoch": 3, "start_offset": start_offset, "last_timestamp": last_timestamp,
            "hanging": hanging, "reason": reason, "transactional_id": None}


def test_a_group_at_or_past_the_lso_is_stuck_and_one_below_it_is_not():
    offsets = [offset("at", "t", 0, 5), offset("past", "t", 0, 9), offset("below", "t", 0, 3),
               offset("caught-up", "u", 0, 4)]
    states = [state("t", 0, 5, 12), state("u", 0, 4, 4)]
    # a later transaction open on the partition does not hold the LSO
    cands = [candidate("t", 0, PID + 1, 8, last_timestamp=T0), candidate("t", 0, PID, 5, last_timestamp=T0 - 60_000)]
    rows = affected_groups(offsets, states, cands, as_of_ms=T0)
    assert [(r["group_id"], r["kind"], r["committed_offset"], r["lag_messages"], r["producer_id"], r["hanging"],
             r["reason"], r["lag_ms"]) for r in rows] == [
        ("at", READ_COMMITTED_STUCK, 5, 7, PID, True, "no_coordinator_record", 60_000),
        ("past", READ_COMMITTED_STUCK, 9, 3, PID, True, "no_coordinator_record", 60_000)]


def test_the_stuck_time_is_since_the_open_transaction_at_the_lso_began():
    span = {"topic": "t", "partition": 0, "first_offset": 5, "outcome": "OPEN", "start_timestamp": T0 - 90_000,
            "producer_id": PID, "producer_epoch": 1}
    rows = affected_groups([offset("g", "t", 0, 5)], [state("t", 0, 5, 12)], [], [span], as_of_ms=T0)
    assert [(r["producer_id"], r["reason"], r["hanging"], r["since_ms"], r["lag_ms"]) for r in rows] == [
        (PID, OPEN, None, T0 - 90_000, 90_000)]


def test_the_leader_replica_serves_the_lso():
    states = [state("t", 0, 5, 12, broker=0, leader=1), state("t", 0, 12, 12, broker=1, leader=1)]
    assert affected_groups([offset("g", "t", 0, 5)], states, [], as_of_ms=T0) == []
    states = [state("t", 0, 5, 12, broker=0, leader=0), state("t", 0, 12, 12, broker=1, leader=0)]
    assert [r["group_id"] for r in affected_groups([offset("g", "t", 0, 5)], states, [], as_of_ms=T0)] == ["g"]


def test_the_verdict_is_the_leaders_replicas():
    cands = [candidate("t", 0, PID, 5, hanging=None, reason="replicas_disagree", broker=0),
             candidate("t", 0, PID, 5, broker=1), candidate("t", 0, PID, 5, hanging=None, reason="log_fault", broker=2)]
    states = [state("t", 0, 5, 12, broker=b, leader=1) for b in range(3)]
    (row,) = affected_groups([offset("g", "t", 0, 5)], states, cands, as_of_ms=T0)
    assert (row["hanging"], row["reason"]) == (True, "no_coordinator_record")


def test_a_pending_commit_is_an_unstable_offset_commit_held_by_its_producer():
    offsets = [offset("g", "t", 0, 1), offset("g", "t", 0, 4, PENDING, PID, offsets_partition=2, ts=T0 - 5_000)]
    states = [state("t", 0, 12, 12), state("__consumer_offsets", 2, 7, 8, leader=0)]
    cands = [candidate("__consumer_offsets", 2, PID + 1, 7),
             candidate("__consumer_offsets", 2, PID, 7, hanging=False, reason="coordinator_ongoing")]
    (row,) = affected_groups(offsets, states, cands, as_of_ms=T0)
    assert row == {"group_id": "g", "topic": "t", "partition": 0, "kind": UNSTABLE_OFFSET_COMMIT,
                   "committed_offset": 1, "pending_offset": 4, "producer_id": PID, "producer_epoch": 0,
                   "held_topic": "__consumer_offsets", "held_partition": 2, "hanging": False,
                   "reason": "coordinator_ongoing", "transactional_id": None, "last_stable_offset": 12,
                   "high_watermark": 12, "lag_messages": 11, "since_ms": T0 - 5_000, "lag_ms": 5_000}


def test_a_pending_commit_of_a_transaction_within_its_timeout_is_open():
    (row,) = affected_groups([offset("g", "t", 0, 4, PENDING, PID)], [], [], as_of_ms=T0)
    assert (row["kind"], row["reason"], row["hanging"], row["committed_offset"], row["lag_messages"]) == (
        UNSTABLE_OFFSET_COMMIT, OPEN, None, None, None)


@pytest.mark.parametrize("committed", [5, 12])
def test_nothing_is_stuck_where_the_lso_is_the_high_watermark(committed):
    assert affected_groups([offset("g", "t", 0, committed)], [state("t", 0, 12, 12)], [], as_of_ms=T0) == []


def test_commits_in_a_log_written_before_0_11(tmp_path):
    """magic 0/1 messages (one plain, one in a gzip wrapper) and a v2 batch after them: every
    commit is plain (no producer), a record that does not decode is a finding at its message,
    and the next goes on."""
    from logscan.format import compression
    from logscan.testing.encoder import legacy_message, legacy_wrapper

    first, second = commit_record("g", "t", 0, 4), commit_record("g", "t", 1, 6)
    broken = Rec(b"\x00\x03", commit_record("g", "t", 2, 1).key, (), T0)   # a value cut short
    parts = [legacy_message(0, first.value, first.key, magic=0),
             legacy_wrapper([(second.key, second.value, T0), (broken.key, broken.value, T0)], offset=2, magic=1,
                            codec=compression.GZIP, timestamp=T0),
             encode_batch([commit_record("g", "t", 0, 8)], base_offset=3)]
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join(parts))
    findings: list = []
    rows = list(segment_rows(str(path), 0, findings))
    assert [(r["partition"], r["committed_offset"], r["producer_id"]) for r in rows] == [(0, 4, -1), (1, 6, -1),
                                                                                        (0, 8, -1)]
    (finding,) = findings
    assert finding.position == len(parts[0]) and "offset 2" in finding.message
    assert view(committed_offsets(rows)) == {(COMMITTED, "g", "t", 0, 8, -1), (COMMITTED, "g", "t", 1, 6, -1)}
