"""The log dir's other checkpoints against the copy (issue 36 item 1): recovery-point-offset-
checkpoint and log-start-offset-checkpoint say what the broker held, as the checkpointed high
watermark and producer snapshots do (tests/scan/test_incomplete_copy.py).

Built from the real clusters' files, cut the way an operator's copy of a running broker leaves
them: files copied at different moments (the log when it ended earlier, a checkpoint after the
broker wrote it again), segments at the front missing. Checkpoints are rewritten in Kafka's own
text format only (tests/scan/copy_shapes.py), segment bytes are only cut at batch boundaries.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

from click.testing import CliRunner

from logscan.cli import main
from logscan.scan.local import scan
from logscan.state import hanging

from .copy_shapes import checkpointed, copy_cluster, list_in_checkpoint

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
HANGING, TV2 = FIXTURES / "hanging", FIXTURES / "tv2"
BROKERS = ("broker-0", "broker-1", "broker-2")
TRANSACTION_STATE = "__transaction_state"
HW, RECOVERY, LOG_START = ("replication-offset-checkpoint", "recovery-point-offset-checkpoint",
                           "log-start-offset-checkpoint")
#: A v2 batch's baseOffset and batchLength, and its lastOffsetDelta (DefaultRecordBatch).
_OFFSET_AND_LENGTH = struct.Struct(">qi")
_LAST_OFFSET_DELTA = struct.Struct(">i")
_LAST_OFFSET_DELTA_AT = 23


def _as_of(cluster: Path) -> int:
    return json.loads((cluster / "truth" / "truth.json").read_text())["recorded_at_ms"]


def _cut(folder: Path, batches: int) -> int:
    """The folder's (only) log cut after its first ``batches`` batches; the log end offset left."""
    (log,) = folder.glob("*.log")
    data, end, log_end = log.read_bytes(), 0, int(log.name.split(".")[0])
    for _ in range(batches):
        base, length = _OFFSET_AND_LENGTH.unpack_from(data, end)
        log_end = base + _LAST_OFFSET_DELTA.unpack_from(data, end + _LAST_OFFSET_DELTA_AT)[0] + 1
        end += 12 + length
    assert end < len(data), log
    log.write_bytes(data[:end])
    return log_end


def _copied_early(copy: Path, folder: str, batches: int, *, recovery_too: bool = False) -> int:
    """``folder`` on every broker as copied while the broker still wrote it: its log cut after
    ``batches`` batches, no producer snapshot past that (the broker wrote them later), and the
    replication-offset-checkpoint copied at the same moment (its high watermark the cut's end).
    The recovery-point-offset-checkpoint was copied later, after the broker flushed and wrote it
    again, unless ``recovery_too`` (a copy whose checkpoints all agree with its cut logs)."""
    ends = set()
    topic, partition = folder.rsplit("-", 1)
    for broker in BROKERS:
        end = _cut(copy / broker / folder, batches)
        for snapshot in (copy / broker / folder).glob("*.snapshot"):
            if int(snapshot.name.split(".")[0]) > end:
                snapshot.unlink()
        list_in_checkpoint(copy / broker, topic, int(partition), end)
        if recovery_too:
            list_in_checkpoint(copy / broker, topic, int(partition), end, RECOVERY)
            _epochs_as_at(copy / broker / folder, end)
        ends.add(end)
    (end,) = ends
    return end


def _epochs_as_at(folder: Path, end: int) -> None:
    """The folder's leader-epoch-checkpoint as it read while the log ended at ``end``: without
    the entries starting past it (Kafka's text format: version, count, one entry a line)."""
    path = folder / "leader-epoch-checkpoint"
    version, _, *entries = path.read_text().splitlines()
    kept = [e for e in entries if int(e.split()[1]) <= end]
    path.write_text("\n".join([version, str(len(kept)), *kept]) + "\n")


def _incomplete(result, folder: str) -> dict[str, str]:
    """The 'incomplete' findings of ``folder``, by broker folder."""
    return {Path(f.path).parent.name: f.message for f in result.findings
            if f.reason == "incomplete" and Path(f.path).name == folder}


def _verdicts(result, topic: str, partition: int) -> set[tuple[str, object]]:
    return {(c["reason"], c["hanging"]) for c in result.tables["hanging_candidates"]
            if (c["topic"], c["partition"]) == (topic, partition)}


def _planned(result) -> set[tuple[str, int]]:
    return {(p["topic"], p["partition"]) for p in result.tables["abort_plans"]}


def _cli_plan(copy: Path, as_of: int) -> set[tuple[str, int]]:
    res = CliRunner().invoke(main, ["plan", str(copy), "--as-of", str(as_of), "--format", "json"])
    assert "Traceback" not in res.output, res.output
    return {(p["topic"], p["partition"]) for p in map(json.loads, res.output.splitlines())}


def test_a_recovery_point_past_the_log_end_withholds_the_abort(tmp_path):
    """hang-0 copied while it held only producer 0's open batch (offsets 0-1), with the high
    watermark checkpointed then (2); the broker then wrote and flushed offsets 2-3 (producer
    2's transaction and its marker) and its recovery-point-offset-checkpoint says 4. Producer
    0's end marker could have been among those offsets: no abort. The same cut copy with a
    recovery point of 2 (nothing says more was there) is judged and planned as before: a cut
    with every checkpoint cut too is beyond what the copy can tell."""
    as_of = _as_of(HANGING)
    agreeing = copy_cluster(HANGING, tmp_path, "agreeing")
    assert _copied_early(agreeing, "hang-0", 1, recovery_too=True) == 2
    trusted = scan([agreeing], as_of_ms=as_of)
    assert _incomplete(trusted, "hang-0") == {}
    assert _verdicts(trusted, "hang", 0) == {(hanging.NO_COORDINATOR_RECORD, True)}
    assert ("hang", 0) in _planned(trusted)

    copy = copy_cluster(HANGING, tmp_path)
    assert _copied_early(copy, "hang-0", 1) == 2
    assert {checkpointed(copy / b, "hang", 0, RECOVERY) for b in BROKERS} == {4}
    result = scan([copy], as_of_ms=as_of)
    gaps = _incomplete(result, "hang-0")
    assert sorted(gaps) == list(BROKERS)
    assert set(gaps.values()) == {
        "incomplete copy: recovery-point-offset-checkpoint has recovery point 4 but the copy's log ends at 2: the "
        "broker had flushed offsets 2 to 3 to disk (UnifiedLog.flush moves the recovery point after the fsync), "
        "which the copy lacks"}
    assert {(s["high_watermark"], s["checkpointed_high_watermark"], s["log_end_offset"], s["copy_gap"] is not None)
            for s in result.tables["partition_state"] if (s["topic"], s["partition"]) == ("hang", 0)} == {
        (2, 2, 2, True)}
    assert _verdicts(result, "hang", 0) == {(hanging.PARTITION_NOT_IN_COPY, None)}
    assert _planned(result) == _planned(trusted) - {("hang", 0)}
    assert _cli_plan(copy, as_of) == _planned(result)


def test_a_coordinator_log_flushed_past_the_copy_proves_no_absence(tmp_path):
    """__transaction_state-2 (hang-never-added's and hang-missed-marker's records, and any id
    that hashes there) copied after its first batch, high watermark checkpointed then: only its
    recovery point (9) says the coordinator had written more. Every verdict resting on a record's
    absence there is coordinator_not_in_copy; the agreeing copy shows what would be planned."""
    as_of = _as_of(HANGING)
    agreeing = copy_cluster(HANGING, tmp_path, "agreeing")
    end = _copied_early(agreeing, "__transaction_state-2", 1, recovery_too=True)
    trusted = scan([agreeing], as_of_ms=as_of)
    assert not [f for f in trusted.findings if f.reason == "incomplete" and "__transaction_state" in f.path]
    assert {("hang", 1), ("hang", 2)} <= _planned(trusted)   # on records a cut coordinator log lacks

    copy = copy_cluster(HANGING, tmp_path)
    assert _copied_early(copy, "__transaction_state-2", 1) == end
    result = scan([copy], as_of_ms=as_of)
    gaps = _incomplete(result, "__transaction_state-2")
    assert sorted(gaps) == list(BROKERS)
    assert all(f"recovery point 9 but the copy's log ends at {end}" in g for g in gaps.values()), gaps
    for (topic, partition) in {("hang", 0), ("hang", 1), ("hang", 2)}:
        assert all(h is not True for _, h in _verdicts(result, topic, partition)), (topic, partition)
    assert {r for r, _ in _verdicts(result, "hang", 1) | _verdicts(result, "hang", 2)} == {
        hanging.COORDINATOR_NOT_IN_COPY}
    # hang-ongoing's id hashes to __transaction_state-0, which is whole: its verdict stands
    assert _verdicts(result, "hang-ongoing", 1) == {(hanging.PARTITION_NOT_IN_TRANSACTION, True)}
    assert _planned(result) == {("hang-ongoing", 1)}
    assert _cli_plan(copy, as_of) == {("hang-ongoing", 1)}


def test_a_log_start_past_the_copy_s_log_end(tmp_path):
    """Broker 2's hang-0 copied as an empty log (0 bytes, as in real copies), its
    log-start-offset-checkpoint naming offset 2 (records deleted up to 2 before the copy):
    the broker's log reached 2 at least, and Kafka itself would delete this copy's segments on
    load. The replica starts and ends at 2, as LogLoader loads it."""
    copy = copy_cluster(HANGING, tmp_path)
    (log,) = (copy / "broker-2" / "hang-0").glob("*.log")
    log.write_bytes(b"")
    list_in_checkpoint(copy / "broker-2", "hang", 0, 2, LOG_START)
    result = scan([copy], as_of_ms=_as_of(HANGING))
    (gap,) = _incomplete(result, "hang-0").values()
    assert ("log-start-offset-checkpoint has log start offset 2 but the copy's log ends at 0: the broker's log "
            "reached at least 2 (a log start never passes the high watermark), and offsets 0 to 1 are not in the "
            "copy; Kafka would delete every segment of this copy on load") in gap
    assert "high watermark 4" in gap and "recovery point 4" in gap   # what the other checkpoints say
    (state,) = [s for s in result.tables["partition_state"]
                if (s["broker"], s["topic"], s["partition"]) == (2, "hang", 0)]
    assert (state["log_start_offset"], state["log_end_offset"], state["high_watermark"]) == (2, 2, 2)
    # broker 2 holds none of producer 0's batches: its whole replicas still judge and plan
    assert {c["broker"] for c in result.tables["hanging_candidates"] if (c["topic"], c["partition"]) == ("hang", 0)
            } == {0, 1}


def _drop_front_segment(replica: Path) -> int:
    """The first segment's files (its .log, .index, .timeindex) not in the copy; the base offset
    of the segment that is now first."""
    first, *rest = sorted(replica.glob("*.log"))
    for f in replica.glob(first.name.split(".")[0] + ".*"):
        f.unlink()
    return int(rest[0].name.split(".")[0])


def test_segments_missing_at_the_front(tmp_path):
    """tv2's straddle-0 (its committed transaction spans segments 0, 3, 6 and 9) copied without
    its first segment on every broker, under a log-start-offset-checkpoint naming 1 (records
    deleted up to 1: Kafka writes the entry only while the log start is past the first segment):
    offsets 1-2 were in the broker's log. Without the entry nothing in the copy says so."""
    as_of = _as_of(TV2)
    copy = copy_cluster(TV2, tmp_path, "unnamed")
    assert {_drop_front_segment(copy / b / "straddle-0") for b in BROKERS} == {3}
    assert [f for f in scan([copy], as_of_ms=as_of).findings if "straddle" in f.path] == []

    copy = copy_cluster(TV2, tmp_path)
    for broker in BROKERS:
        _drop_front_segment(copy / broker / "straddle-0")
        list_in_checkpoint(copy / broker, "straddle", 0, 1, LOG_START)
    result = scan([copy], as_of_ms=as_of)
    gaps = _incomplete(result, "straddle-0")
    assert sorted(gaps) == list(BROKERS)
    assert {g.split(" (", 1)[0] for g in gaps.values()} == {
        "incomplete copy: log-start-offset-checkpoint has log start offset 1 but the copy's first segment starts "
        "at 3: offsets 1 to 2 are missing at the front"}
    assert {(s["log_start_offset"], s["copy_gap"] is not None) for s in result.tables["partition_state"]
            if s["topic"] == "straddle"} == {(3, True)}
    assert {f.reason for f in result.findings} == {"incomplete"}
    out = CliRunner().invoke(main, ["scan", str(copy), "--as-of", str(as_of), "--no-progress"])
    assert out.exit_code == 1 and "Traceback" not in out.output, out.output
    assert "missing at the front" in out.output


def _broker_1_alone_cut(tmp_path: Path, name: str) -> Path:
    """Broker 1's log dir alone (the coordinators' leader at the end), its __transaction_state-2
    copied after two batches with every checkpoint agreeing (high watermark and recovery point
    2) and no snapshot past them: of the log dir's files, only the partition's
    leader-epoch-checkpoint (epoch 1 from offset 9: broker 1 became leader at 9) is newer."""
    copy = copy_cluster(HANGING, tmp_path, name)
    for other in ("broker-0", "broker-2"):
        shutil.rmtree(copy / other)
    folder = copy / "broker-1" / "__transaction_state-2"
    assert _cut(folder, 2) == 2
    for snapshot in folder.glob("*.snapshot"):
        snapshot.unlink()
    for checkpoint in (HW, RECOVERY):
        list_in_checkpoint(copy / "broker-1", TRANSACTION_STATE, 2, 2, checkpoint)
    return copy


def test_a_leader_epoch_past_the_copy_proves_no_absence(tmp_path):
    """The leader-epoch-checkpoint as evidence (issue 36 item 3): Kafka adds an epoch entry at
    the log end and drops those past it whenever the log is truncated, so broker 1's entry
    (1, 9) says its __transaction_state-2 reached offset 9 where the copy ends at 2. The
    verdicts resting on records missing there are coordinator_not_in_copy, no plan. With the
    epoch file as it read while the log ended at 2 (epoch 0 only: written in Kafka's format),
    nothing tells, and the cut copy is judged as a whole one."""
    as_of = _as_of(HANGING)
    agreeing = _broker_1_alone_cut(tmp_path, "agreeing")
    epochs = agreeing / "broker-1" / "__transaction_state-2" / "leader-epoch-checkpoint"
    assert epochs.read_text() == "0\n2\n0 0\n1 9\n"   # the real file
    _epochs_as_at(epochs.parent, 2)
    assert epochs.read_text() == "0\n1\n0 0\n"
    trusted = scan([agreeing], as_of_ms=as_of)
    assert not [f for f in trusted.findings if f.reason == "incomplete"]
    assert {("hang", 1), ("hang", 2)} <= _planned(trusted)

    copy = _broker_1_alone_cut(tmp_path, "brokers")
    result = scan([copy], as_of_ms=as_of)
    assert _incomplete(result, "__transaction_state-2") == {"broker-1": (
        "incomplete copy: leader-epoch-checkpoint has epoch 1 from offset 9 (line 4) but the copy's log ends at 2: "
        "the broker's log reached 9 (LeaderEpochFileCache adds an epoch at the log end and drops those past it when "
        "the log is truncated), and offsets 2 to 8 are not in the copy")}
    assert {r for r, _ in _verdicts(result, "hang", 1) | _verdicts(result, "hang", 2)} == {
        hanging.COORDINATOR_NOT_IN_COPY}
    assert not {("hang", 1), ("hang", 2)} & _planned(result)
    assert _cli_plan(copy, as_of) == _planned(result)


def test_a_leader_epoch_at_the_log_end_is_no_gap(tmp_path):
    """Every fixture replica whose leader-epoch-checkpoint has a later epoch holds it at its log
    end (a leader elected at shutdown, nothing appended since): no gap, as Kafka keeps such an
    entry until it truncates."""
    result = scan([copy_cluster(HANGING, tmp_path)], as_of_ms=_as_of(HANGING))
    # the fixture's own cut follower (replica_missed_marker) is the one incomplete replica
    assert [(Path(f.path).parent.name, Path(f.path).name) for f in result.findings] == [("broker-2", "replica-0")]
    assert "leader-epoch-checkpoint" not in result.findings[0].message
    assert {s["copy_gap"] for s in result.tables["partition_state"] if s["broker"] == 1} == {None}


def _replica_cut_at(tmp_path: Path, name: str, keep: int) -> Path:
    """The hanging cluster's replica-0 (replica-txn's committed transaction: data at 0-3, its
    COMMIT marker at 4, bytes 206-283 of broker 0's log) copied on every broker as its first
    ``keep`` bytes of broker 0's log, no producer snapshot, the checkpoints copied before the
    marker was written (high watermark and recovery point 4): rsync cut mid-file, after the
    files at the top were copied first."""
    copy = copy_cluster(HANGING, tmp_path, name)
    data = (HANGING / "brokers" / "broker-0" / "replica-0" / "00000000000000000000.log").read_bytes()
    assert len(data) == 284 and _OFFSET_AND_LENGTH.unpack_from(data, 206) == (4, 66)
    for broker in BROKERS:
        (copy / broker / "replica-0" / "00000000000000000000.log").write_bytes(data[:keep])
        for snapshot in (copy / broker / "replica-0").glob("*.snapshot"):
            snapshot.unlink()
        for checkpoint in (HW, RECOVERY):
            list_in_checkpoint(copy / broker, "replica", 0, 4, checkpoint)
    return copy


def test_a_log_cut_inside_its_last_batch_withholds_the_abort(tmp_path):
    """replica-0's log cut 34 bytes into its COMMIT marker's batch on every broker (an
    interrupted rsync of a file the broker was writing): the coordinator completed the
    transaction, so without the cut's evidence it would be coordinator_moved_on, hanging, with
    an abort planned. Kafka writes whole batches: the part says the log went on past the copy,
    so the verdict is partition_not_in_copy and no abort is planned. Cut at the batch's first
    byte nothing in the copy tells (the limit of what a copy can say), and the abort is
    planned: the verdict a copy cut at a batch boundary gets."""
    as_of = _as_of(HANGING) + 3_600_000  # the committed transaction an hour past the max timeout
    boundary = scan([_replica_cut_at(tmp_path, "boundary", 206)], as_of_ms=as_of)
    assert _incomplete(boundary, "replica-0") == {}
    assert _verdicts(boundary, "replica", 0) == {(hanging.COORDINATOR_MOVED_ON, True)}
    assert ("replica", 0) in _planned(boundary)

    copy = _replica_cut_at(tmp_path, "brokers", 240)
    result = scan([copy], as_of_ms=as_of)
    gaps = _incomplete(result, "replica-0")
    assert sorted(gaps) == list(BROKERS)
    assert set(gaps.values()) == {
        "incomplete copy: 00000000000000000000.log ends inside an entry at byte 206, holding 34 of the 78 bytes of "
        "the batch: Kafka writes whole batches, so the log went on past the copy's end (a file copied while the "
        "broker wrote it, or a copy cut mid-file; after a crash Kafka's recovery truncates the part and fetches the "
        "rest from the leader)"}
    assert _verdicts(result, "replica", 0) == {(hanging.PARTITION_NOT_IN_COPY, None)}
    assert _planned(result) == _planned(boundary) - {("replica", 0)}
    assert _cli_plan(copy, as_of) == _planned(result)
    # a header cut short (10 bytes of the marker's entry) is a cut too; a zero-filled tail
    # (log.preallocate) is not
    for keep, tail, expected in ((216, b"", {(hanging.PARTITION_NOT_IN_COPY, None)}),
                                 (206, bytes(4096), {(hanging.COORDINATOR_MOVED_ON, True)})):
        copy = _replica_cut_at(tmp_path, f"cut-{keep}-{len(tail)}", keep)
        for broker in BROKERS:
            with (copy / broker / "replica-0" / "00000000000000000000.log").open("ab") as log:
                log.write(tail)
        assert _verdicts(scan([copy], as_of_ms=as_of), "replica", 0) == expected, (keep, len(tail))
